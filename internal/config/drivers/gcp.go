//go:build !cairn_aws

package drivers

import (
	_ "github.com/cairn-dev/cairn/blob/gcs"
	_ "github.com/cairn-dev/cairn/notify/gcppubsub"
)
