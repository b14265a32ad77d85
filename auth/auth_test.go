package auth_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/auth"
)

func TestParseKeys(t *testing.T) {
	h := auth.HashSecret("s")
	keys, err := auth.ParseKeys("a:read:" + h + ", b:worker+execute:" + h)
	if err != nil || len(keys) != 2 || keys[1].ID != "b" || len(keys[1].Scopes) != 2 {
		t.Fatalf("keys %+v err %v", keys, err)
	}
	for _, bad := range []string{
		"a:read",                       // two fields
		"a:read:" + h + ",a:read:" + h, // duplicate id
		"a:root:" + h,                  // unknown scope
		"a:read:abcd",                  // short hash
	} {
		if _, err := auth.ParseKeys(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	// A malformed entry's error does not repeat what follows its id.
	if _, err := auth.ParseKeys("a:secret"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("malformed entry: %v", err)
	}
}

func TestGrants(t *testing.T) {
	for _, c := range []struct {
		have []string
		need string
		want bool
	}{
		{[]string{auth.ScopeRead}, auth.ScopeRead, true},
		{[]string{auth.ScopeRead}, auth.ScopeExecute, false},
		{[]string{auth.ScopeWrite}, auth.ScopeWorker, true},
		{[]string{auth.ScopeWrite}, auth.ScopeExecute, true},
		{[]string{auth.ScopeWrite}, auth.ScopeRead, false},
		{[]string{auth.ScopeWrite}, auth.ScopeAdmin, false},
		{[]string{auth.ScopeAdmin}, auth.ScopeAdmin, true},
		{[]string{auth.ScopeAdmin}, auth.ScopeRead, true},
		{nil, auth.ScopeRead, false},
	} {
		if got := auth.Grants(c.have, c.need); got != c.want {
			t.Errorf("Grants(%v, %s) = %v", c.have, c.need, got)
		}
	}
}
