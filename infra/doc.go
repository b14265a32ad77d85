// Package infra holds cairn's deployment definitions — aws/ (an AWS SAM
// template), gcp/ (Cloud Run services, Cloud Scheduler job, IAM role,
// deploy script), image/ (the container image), local/ (several processes
// on one machine) — and, in infra_test.go, the offline checks that keep
// them consistent with the code.
package infra
