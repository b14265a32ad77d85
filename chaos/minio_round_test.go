//go:build chaos

package chaos_test

// make chaos (-tags chaos) runs the MinIO round with no bus too; see longRounds.
func init() { longRounds = true }
