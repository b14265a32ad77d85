package busurl

import (
	"errors"
	"net/url"
	"strconv"
	"testing"
	"time"
)

func TestParams(t *testing.T) {
	var n int
	var d time.Duration
	p := Params{"n": Int(&n), "d": Duration(&d)}
	if err := p.Set("drv", url.Values{"n": {"7", "8"}, "d": {"2s"}}); err != nil || n != 7 || d != 2*time.Second {
		t.Fatalf("n=%d d=%v, %v; want the first values, 7 and 2s", n, d, err)
	}
	err := p.Set("drv", url.Values{"n": {"x"}})
	if !errors.Is(err, strconv.ErrSyntax) || err.Error() != `drv: query parameter n: strconv.Atoi: parsing "x": invalid syntax` {
		t.Fatalf("bad value: %v", err)
	}
	if err := p.Set("drv", url.Values{"n": {"1"}, "m": {"1"}}); err == nil || err.Error() != `drv: unknown query parameter "m"` {
		t.Fatalf("unknown parameter: %v", err)
	}
	rest, err := p.SetKnown("drv", url.Values{"n": {"3"}, "region": {"eu"}})
	if err != nil || n != 3 || len(rest) != 1 || rest.Get("region") != "eu" {
		t.Fatalf("SetKnown: n=%d, rest %v, %v; want 3 and the region left", n, rest, err)
	}
}
