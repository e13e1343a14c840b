package admin

import "net/http"

// Joined is how many /readyz calls of h waited on a probe another call
// started.
func Joined(h http.Handler) int {
	rd := &h.(*handler).ready
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.joined
}
