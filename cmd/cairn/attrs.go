package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// attributeArgs are the search attributes of --attr name=value flags:
// true/false a boolean, a number a number, anything else a string (an
// RFC 3339 string is a time to the server).
func attributeArgs(args []string) (map[string]any, error) {
	if len(args) == 0 {
		return nil, nil
	}
	out := map[string]any{}
	for _, a := range args {
		name, v, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--attr %q: not name=value", a)
		}
		switch _, err := strconv.ParseFloat(v, 64); {
		case v == "true" || v == "false":
			out[name] = v == "true"
		case err == nil && json.Valid([]byte(v)):
			out[name] = json.RawMessage(v)
		default:
			out[name] = v
		}
	}
	return out, nil
}
