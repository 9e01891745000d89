package naming_test

import (
	"fmt"

	"github.com/mcp-gate/mcp-gate/naming"
)

func Example() {
	gate := naming.DefaultGateName
	if err := naming.ValidateGateName(gate); err != nil {
		panic(err)
	}
	tab := naming.Build(naming.Budget(gate), []naming.Key{
		{Server: "github", Name: "create_issue"},
		{Server: "fs", Name: "read.file"}, // sanitised, nobody else spells it
		{Server: "fs", Name: "a.b"},       // a_b is plain and wins: hashed; printf 'fs\0a.b' | sha256sum
		{Server: "fs", Name: "a_b"},
	})
	for k, wire := range tab.All() {
		fmt.Printf("%-24s %s\n", k, wire)
	}

	// The proxy maps a host's call back through the table.
	k, ok := tab.Lookup("fs__read_file")
	fmt.Println(k.Server, k.Name, ok)
	// Output:
	// mcp:fs:a.b               fs__a_b_748250f6
	// mcp:fs:a_b               fs__a_b
	// mcp:fs:read.file         fs__read_file
	// mcp:github:create_issue  github__create_issue
	// fs read.file true
}

func ExampleParseSpelling() {
	for _, s := range []string{
		"mcp:github:create_issue",
		"github__create_issue",
		"mcp__gate__github__create_issue",
		"github__create_a_very_long_na_1a2b3c4d",
	} {
		k, err := naming.ParseSpelling(s, "gate")
		fmt.Printf("%#v %v\n", k, err)
	}
	// Output:
	// naming.Key{Server:"github", Name:"create_issue"} <nil>
	// naming.Key{Server:"github", Name:"create_issue"} <nil>
	// naming.Key{Server:"github", Name:"create_issue"} <nil>
	// naming.Key{Server:"", Name:""} "github__create_a_very_long_na_1a2b3c4d" ends in "_1a2b3c4d": wire name looks hashed and cannot be reversed without the catalog; expected the policy spelling mcp:github:<original tool name>
}
