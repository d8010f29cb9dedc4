//go:build !race

package main

// raceEnabled: this binary was built with -race.
const raceEnabled = false
