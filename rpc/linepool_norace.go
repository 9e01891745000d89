//go:build !race

package rpc

// raceBuild: see linepool_race.go.
const raceBuild = false
