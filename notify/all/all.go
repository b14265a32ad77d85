// Package all registers every notification bus driver with notify.Open:
//
//	import _ "github.com/cairn-dev/cairn/notify/all"
package all

import (
	_ "github.com/cairn-dev/cairn/notify/faults"
	_ "github.com/cairn-dev/cairn/notify/gcppubsub"
	_ "github.com/cairn-dev/cairn/notify/mem"
	_ "github.com/cairn-dev/cairn/notify/nats"
	_ "github.com/cairn-dev/cairn/notify/sqs"
)
