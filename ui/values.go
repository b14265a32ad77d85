package ui

import (
	"bytes"
	"encoding/json"
	"html/template"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/sdk/codec"
)

// A value a client encrypted (sdk/codec) is shown as a badge naming its
// key, never as its ciphertext: the server holds no key. The badge carries
// the encrypted value in data-envelope, so the page's script can decrypt
// it with a keyring the reader gives it (assets/app.js), in the browser.
// data-indent is the column the value starts at in an indented <pre>,
// for the decrypted value's lines.

// maxParsed bounds the JSON parsed to find encrypted values in: larger
// values are shown as pretty shows them.
const maxParsed = 4 << 20

// valueHTML is raw for a <pre>: indented as pretty indents it, with every
// encrypted value in it (at any depth) a badge.
func valueHTML(raw json.RawMessage) template.HTML {
	x, ok := encryptedTree(raw)
	if !ok {
		return template.HTML(template.HTMLEscapeString(pretty(raw)))
	}
	p := &valuePrinter{}
	p.value(x, "")
	return template.HTML(p.b.String())
}

// briefHTML is raw on one line, cut after briefLen characters, with every
// encrypted value in it a badge.
func briefHTML(raw json.RawMessage) template.HTML {
	x, ok := encryptedTree(raw)
	if !ok {
		if len(raw) > briefLen {
			return template.HTML(template.HTMLEscapeString(strings.ToValidUTF8(string(raw[:briefLen]), "") + "…"))
		}
		return template.HTML(template.HTMLEscapeString(string(raw)))
	}
	p := &valuePrinter{brief: true}
	p.value(x, "")
	if p.cut {
		p.b.WriteString("…")
	}
	return template.HTML(p.b.String())
}

// briefLen is how much of a value brief shows (a function's operation
// results in the steps table).
const briefLen = 120

// encryptedTree decodes raw if it holds an encrypted value.
func encryptedTree(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 || len(raw) > maxParsed || !bytes.Contains(raw, []byte(codec.Marker)) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var x any
	if d.Decode(&x) != nil {
		return nil, false
	}
	return x, true
}

// envelopeOf returns the object under the marker if x is an encrypted
// value (codec.IsEncrypted's shape).
func envelopeOf(x any) (map[string]any, bool) {
	m, ok := x.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	e, ok := m[codec.Marker].(map[string]any)
	return e, ok
}

// valuePrinter writes a decoded JSON value as escaped HTML: indented by
// two spaces as encoding/json indents (object members sorted), or on one
// line when brief (stopping once briefLen characters are shown).
type valuePrinter struct {
	b     strings.Builder
	brief bool
	shown int  // characters shown, for brief
	cut   bool // brief left something out
}

func (p *valuePrinter) text(s string) {
	if p.brief {
		if p.shown >= briefLen {
			p.cut = p.cut || s != ""
			return
		}
		if r := []rune(s); p.shown+len(r) > briefLen {
			s, p.cut = string(r[:briefLen-p.shown]), true
		}
		p.shown += len([]rune(s))
	}
	p.b.WriteString(template.HTMLEscapeString(s))
}

func (p *valuePrinter) value(x any, indent string) {
	if p.brief && p.shown >= briefLen {
		p.cut = true
		return
	}
	if e, ok := envelopeOf(x); ok {
		p.badge(e, indent)
		return
	}
	nl, in := "\n"+indent+"  ", indent+"  "
	end, sep := "\n"+indent, ": "
	if p.brief {
		nl, end, sep = "", "", ":"
	}
	switch v := x.(type) {
	case map[string]any:
		if len(v) == 0 {
			p.text("{}")
			return
		}
		p.text("{")
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				p.text(",")
			}
			p.text(nl + jsonString(k) + sep)
			p.value(v[k], in)
		}
		p.text(end + "}")
	case []any:
		if len(v) == 0 {
			p.text("[]")
			return
		}
		p.text("[")
		for i, el := range v {
			if i > 0 {
				p.text(",")
			}
			p.text(nl)
			p.value(el, in)
		}
		p.text(end + "]")
	case string:
		p.text(jsonString(v))
	case json.Number:
		p.text(v.String())
	case bool:
		p.text(strconv.FormatBool(v))
	default:
		p.text("null")
	}
}

// badge shows an encrypted value: the key it needs, the value itself for
// the page's script.
func (p *valuePrinter) badge(e map[string]any, indent string) {
	kid, _ := e["kid"].(string)
	label := "encrypted (key " + kid + ")"
	if kid == "" {
		label = "encrypted"
	}
	env, _ := json.Marshal(e)
	if p.brief {
		p.shown += len(label)
	}
	where := ` data-indent="` + strconv.Itoa(len(indent)) + `"`
	if p.brief {
		where = ` data-brief="true"`
	}
	p.b.WriteString(`<span class="enc" data-kid="` + template.HTMLEscapeString(kid) +
		`" data-envelope="` + template.HTMLEscapeString(string(env)) + `"` + where +
		` title="encrypted by the client; the server holds no key. Give this page the keyring to read it (Decrypt, at the top).">` +
		template.HTMLEscapeString(label) + `</span>`)
}

// jsonString is s as a JSON string, "<" left as it is (the page escapes).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
