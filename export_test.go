package snodo

// SetModernVersions replaces the modern versions Snodo speaks, newest
// first, so that tests can exercise version choice among several; it
// returns a function that restores them.
func SetModernVersions(vs []string) (restore func()) {
	old := modernVersions
	modernVersions = vs
	return func() { modernVersions = old }
}
