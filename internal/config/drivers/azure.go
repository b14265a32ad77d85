//go:build !cairn_aws && !cairn_gcp

package drivers

import _ "github.com/cairn-dev/cairn/blob/azure"
