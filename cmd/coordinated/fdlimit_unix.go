//go:build unix

package main

import "syscall"

// raiseFileLimit raises the soft limit on open files to the hard limit, so
// that idle connections cannot starve new ones at a default of 1,024, and
// returns the limit now in force.
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return uint64(lim.Cur), err
		}
		lim = want
	}
	return uint64(lim.Cur), nil
}
