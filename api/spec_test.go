package api_test

import (
	"testing"

	"github.com/cairn-dev/cairn/api"
)

// No schema carries Huma's `$schema` link: it is not data, and every
// generated client would grow a field for it.
func TestSpecHasNoSchemaLinks(t *testing.T) {
	for name, s := range api.Spec().Components.Schemas.Map() {
		if _, ok := s.Properties["$schema"]; ok {
			t.Errorf("schema %s has a $schema property", name)
		}
	}
}
