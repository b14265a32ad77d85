//go:build !cairn_gcp

package drivers

import (
	_ "github.com/cairn-dev/cairn/blob/s3"
	_ "github.com/cairn-dev/cairn/notify/sqs"
)
