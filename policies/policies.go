package policies

import "embed"

// FS holds every *.yaml file of this directory, by its base name.
//
//go:embed *.yaml
var FS embed.FS
