package notify_test

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/notify/bustest"
	_ "github.com/cairn-dev/cairn/notify/mem"
)

// TestEveryHintFieldTravels fails when notify.Hint gains a field that the
// bustest sample leaves zero, so the round-trip tests cover every field.
func TestEveryHintFieldTravels(t *testing.T) {
	hs := bustest.Hints("f", 11)
	for i := range reflect.TypeFor[notify.Hint]().NumField() {
		set := false
		for _, h := range hs {
			set = set || !reflect.ValueOf(h).Field(i).IsZero()
		}
		if !set {
			t.Errorf("bustest.Hints leaves notify.Hint.%s zero: extend it", reflect.TypeFor[notify.Hint]().Field(i).Name)
		}
	}
	msgs, err := notify.Encode(hs, 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Encode: %d messages, %v", len(msgs), err)
	}
	got, err := notify.Decode(msgs[0])
	if err != nil || len(got) != len(hs) {
		t.Fatalf("Decode: %d hints, %v", len(got), err)
	}
	for i, h := range hs {
		if !bustest.Equal(got[i], h) {
			t.Fatalf("Decode: %+v; want %+v", got[i], h)
		}
	}
}

func TestEncodeSplits(t *testing.T) {
	hints := bustest.Hints("split", 1000)
	for _, limit := range []int{0, 300, 1000, 4096, notify.DefaultMaxMessageBytes} {
		msgs, err := notify.Encode(hints, limit)
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		var all []notify.Hint
		for _, m := range msgs {
			if limit > 0 && len(m) > limit {
				t.Fatalf("limit %d: message of %d bytes", limit, len(m))
			}
			if !strings.HasPrefix(string(m), `{"v":1,"hints":[{`) {
				t.Fatalf("unexpected message start %.40q", m)
			}
			hs, err := notify.Decode(m)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, hs...)
		}
		if len(all) != len(hints) {
			t.Fatalf("limit %d: %d hints back, want %d", limit, len(all), len(hints))
		}
		for i := range hints {
			if !bustest.Equal(all[i], hints[i]) {
				t.Fatalf("limit %d: hint %d: %+v != %+v", limit, i, all[i], hints[i])
			}
		}
		t.Logf("limit %d: %d hints in %d messages", limit, len(hints), len(msgs))
	}
	if msgs, err := notify.Encode(nil, 100); err != nil || len(msgs) != 0 {
		t.Fatalf("Encode(nil) = %d messages, %v", len(msgs), err)
	}
}

func TestEncodeHintTooLarge(t *testing.T) {
	hints := bustest.Hints("big", 3)
	hints[1].Run = strings.Repeat("r", 500)
	msgs, err := notify.Encode(hints, 400)
	if !errors.Is(err, notify.ErrHintTooLarge) {
		t.Fatalf("err = %v, want ErrHintTooLarge", err)
	}
	n := 0
	for _, m := range msgs {
		hs, _ := notify.Decode(m)
		n += len(hs)
	}
	if n != 2 {
		t.Fatalf("%d hints encoded, want the 2 that fit", n)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, m := range []string{``, `{`, `[]`, `{"v":2,"hints":[]}`, `{"hints":[]}`} {
		if _, err := notify.Decode([]byte(m)); err == nil {
			t.Errorf("Decode(%q) succeeded", m)
		}
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	if _, err := notify.Open(ctx, "nosuch://x"); err == nil || !strings.Contains(err.Error(), "mem") {
		t.Errorf("unknown scheme: %v (want the registered schemes listed)", err)
	}
	if _, err := notify.Open(ctx, "no-scheme"); err == nil {
		t.Error("URL without scheme accepted")
	}
	b, err := notify.Open(ctx, "MEM://open-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := notify.Close(b); err != nil {
		t.Fatal(err)
	}
	if got := notify.Redact("nats://u:secret@h:1"); strings.Contains(got, "secret") {
		t.Errorf("Redact kept the password: %s", got)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	notify.Register("mem", func(context.Context, *url.URL) (notify.Bus, error) { return nil, nil })
}

func TestSinkStops(t *testing.T) {
	var n int
	s := notify.NewSink(func(notify.Hint) { n++ })
	if !s.Deliver(bustest.Hints("s", 2)) || n != 2 {
		t.Fatal("delivery before Close")
	}
	s.Close()
	s.Close()
	if s.Deliver(bustest.Hints("s", 2)) || n != 2 {
		t.Fatal("delivery after Close")
	}
	if s.DeliverMessage([]byte("garbage"), nil) {
		t.Fatal("DeliverMessage after Close reported true")
	}
}

// TestHintKinds: each kind of message is told apart by its fields, and
// only ready and taken hints are work.
func TestHintKinds(t *testing.T) {
	for _, c := range []struct {
		h    notify.Hint
		kind notify.Kind
		work bool
	}{
		{notify.Hint{Run: "r", Step: "s", Attempt: 1}, notify.KindReady, true},
		{notify.Hint{Run: "r", Step: "s", Attempt: 1, Taken: true}, notify.KindTaken, true},
		{notify.ChangeNotice("r", 3), notify.KindChanged, false},
		{notify.RegistrationNotice("wf"), notify.KindRegistered, false},
	} {
		if k := c.h.Kind(); k != c.kind || c.h.Work() != c.work {
			t.Errorf("%+v: kind %s, work %v; want %s, %v", c.h, k, c.h.Work(), c.kind, c.work)
		}
	}
}
