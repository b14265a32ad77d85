//go:build cairn_gcp && !cairn_aws

package drivers

const cloud = "gcp"
