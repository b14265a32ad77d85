//go:build cairn_aws

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/config"
)

// TestAWSBuildRefusesOIDC: the AWS build has no OIDC verifier and says so
// at start instead of accepting no token.
func TestAWSBuildRefusesOIDC(t *testing.T) {
	_, err := newVerifier(context.Background(), config.OIDC{Audience: "a", Emails: []string{"a@b"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "cairn_aws") {
		t.Fatalf("got %v", err)
	}
}
