//go:build chaos

package chaos_test

// make chaos (-tags chaos) runs the MinIO round too; see minioRounds.
func init() { minioRounds = true }
