package file

// Syncs returns how many fsync-class system calls the package has made.
func Syncs() int64 { return syncs.Load() }
