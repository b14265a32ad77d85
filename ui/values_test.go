package ui

import (
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/sdk/codec"
)

// Encrypted values are shown as badges naming their key, wherever they
// are in a value; the badge carries the encrypted value for the page's
// script and its column for the decrypted lines; the rest is indented as
// before, and values without one are shown exactly as before.
func TestValueHTMLBadges(t *testing.T) {
	ring, err := codec.ParseKeyring([]byte(`{"keys":[{"id":"k2","key":"AJqq/Kp7b/sOPpofDkL5FxnphlkYdg/pLTmcpZor4yk="}]}`))
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v string) string {
		e, err := ring.Encrypt(json.RawMessage(v))
		if err != nil {
			t.Fatal(err)
		}
		return string(e)
	}
	whole := enc(`{"card":"4242 4242 4242 4242"}`)
	got := string(valueHTML(json.RawMessage(whole)))
	if strings.Contains(got, "4242") || !strings.Contains(got, `>encrypted (key k2)</span>`) || strings.Count(got, `class="enc"`) != 1 {
		t.Fatalf("a wholly encrypted value: %s", got)
	}
	env := regexp.MustCompile(`data-envelope="([^"]*)"`).FindStringSubmatch(got)
	var back map[string]any
	if env == nil || json.Unmarshal([]byte(html.UnescapeString(env[1])), &back) != nil {
		t.Fatalf("no envelope on the badge: %s", got)
	}
	rewrapped, _ := json.Marshal(map[string]any{codec.Marker: back})
	if plain, err := ring.Decrypt(rewrapped); err != nil || string(plain) != `{"card":"4242 4242 4242 4242"}` {
		t.Fatalf("the badge's envelope decrypts to %s, %v", plain, err)
	}

	// Nested: badges where the encrypted members are, the rest in clear.
	mixed := `{"order":7,"note":"<b>x</b>","secret":` + whole + `,"list":[1,` + enc(`"s"`) + `]}`
	got = string(valueHTML(json.RawMessage(mixed)))
	text := html.UnescapeString(regexp.MustCompile(`<span class="enc"[^>]*>([^<]*)</span>`).ReplaceAllString(got, "«$1»"))
	want := "{\n  \"list\": [\n    1,\n    «encrypted (key k2)»\n  ],\n  \"note\": \"<b>x</b>\",\n  \"order\": 7,\n  \"secret\": «encrypted (key k2)»\n}"
	if text != want {
		t.Fatalf("mixed value shown as\n%s\nwant\n%s", text, want)
	}
	if !strings.Contains(got, `&lt;b&gt;`) || !strings.Contains(got, `data-indent="4"`) || !strings.Contains(got, `data-indent="2"`) {
		t.Fatalf("escaping or indents: %s", got)
	}

	// Without an encrypted value: as pretty shows it, escaped.
	plain := `{"b":"<i>","a":[1,2]}`
	if got := string(valueHTML(json.RawMessage(plain))); got != html.EscapeString(pretty(json.RawMessage(plain))) {
		t.Fatalf("plain value: %s", got)
	}
	// A string merely naming the marker is no badge.
	if got := string(valueHTML(json.RawMessage(`{"x":"$cairn_encrypted"}`))); strings.Contains(got, "enc") && strings.Contains(got, "<span") {
		t.Fatalf("a string naming the marker: %s", got)
	}

	// Brief: one line, the badge counted as its label, cut at 120.
	got = string(briefHTML(json.RawMessage(`{"ok":true,"v":` + whole + `}`)))
	if !strings.HasPrefix(got, `{&#34;ok&#34;:true,&#34;v&#34;:<span class="enc"`) || !strings.Contains(got, `data-brief="true"`) || !strings.HasSuffix(got, "</span>}") {
		t.Fatalf("brief: %s", got)
	}
	long := `{"pad":"` + strings.Repeat("x", 200) + `","v":` + whole + `}`
	got = string(briefHTML(json.RawMessage(long)))
	if strings.Contains(got, "<span") || !strings.HasSuffix(got, "…") || len(html.UnescapeString(got)) > 130 {
		t.Fatalf("brief of a long value: %s", got)
	}
	if got := string(briefHTML(json.RawMessage(`"<b>"`))); got != `&#34;&lt;b&gt;&#34;` {
		t.Fatalf("brief of a plain value: %s", got)
	}
}
