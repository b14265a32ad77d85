//go:build !cairn_aws && !cairn_gcp

package drivers

const cloud = "all"
