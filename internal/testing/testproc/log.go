package testproc

import "os"

// logTailBytes is how much of a log LogTail returns.
const logTailBytes = 2000

// LogTail returns the last 2,000 bytes of the log file at path, or "(no
// log)" when it cannot be read, for the error of a server that did not
// start.
func LogTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	if len(b) > logTailBytes {
		b = b[len(b)-logTailBytes:]
	}
	return string(b)
}
