package file

// Syncs returns how many fsync-class system calls the package has made.
func Syncs() int64 { return syncs.Load() }

// SetSyncfs chooses how a batch is made durable (syncfs, or an fsync per
// file and directory) and returns the previous choice.
func SetSyncfs(on bool) bool {
	old := useSyncfs
	useSyncfs = on
	return old
}
