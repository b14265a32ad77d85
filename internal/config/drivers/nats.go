//go:build !cairn_lambda

package drivers

import _ "github.com/cairn-dev/cairn/notify/nats"
