package main

import (
	"bytes"
	"os"
	"strconv"
)

// writePIDFile writes the process id to path (--pid) and returns a
// function that removes the file again if it still holds this id.
func writePIDFile(path string) (func(), error) {
	pid := []byte(strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(path, pid, 0o644); err != nil {
		return nil, err
	}
	return func() {
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(bytes.TrimSpace(cur), pid) {
			os.Remove(path)
		}
	}, nil
}
