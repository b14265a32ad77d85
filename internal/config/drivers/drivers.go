// Package drivers links the blob and notification drivers into a
// function's binary: import it for its side effects.
//
//	import _ "github.com/cairn-dev/cairn/internal/config/drivers"
//
// Build tags pick a cloud, to keep binaries small (a GCS client brings
// gRPC; each cloud's SDK is megabytes): the default build has every
// driver; -tags cairn_aws keeps the AWS drivers (s3, awssqs), -tags
// cairn_gcp the Google ones (gs, gcppubsub). Every build has the local
// ones: file://, mem:// buckets; mem:// buses; and nats:// buses except on
// Lambda (-tags cairn_lambda): a frozen environment cannot hold the
// subscription, and the Lambda stack's bus is SQS. A URL whose scheme is
// not built in is reported at start by internal/config.
package drivers

import (
	_ "github.com/cairn-dev/cairn/blob/file"
	_ "github.com/cairn-dev/cairn/blob/mem"
	_ "github.com/cairn-dev/cairn/notify/mem"
)

// Cloud names the cloud this build was made for: "aws", "gcp" or "all".
const Cloud = cloud
