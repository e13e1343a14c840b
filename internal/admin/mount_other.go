//go:build !unix

package admin

// isMountPoint is not known here; a mount point as a backup's target then
// fails when claim removes it.
func isMountPoint(string) bool { return false }
