package policy

import "testing"

func TestConditionsReadTheUser(t *testing.T) {
	p, _, err := Parse("p.yaml", []byte(`version: 1
fallback: deny
rules:
  - name: devs
    match: ["mcp:*:*"]
    when: '"dev" in user.groups && user.sub != "" && user.email.endsWith("@x")'
    action: allow
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Decide(Call{Server: "s", Name: "t", User: User{Sub: "a", Email: "a@x", Groups: []string{"dev"}}})
	e := p.Decide(Call{Server: "s", Name: "t", User: User{Sub: "b", Email: "b@x", Groups: []string{"ops"}}})
	t.Log(d, e)
	if d.Verdict != Allow || e.Verdict != Deny {
		t.Fatal("bad")
	}
	_, _, err = Parse("p.yaml", []byte(`version: 1
fallback: deny
rules:
  - match: ["mcp:*:*"]
    when: '"dev" in user.grups'
    action: allow
`), Options{})
	t.Log(err)
	if err == nil {
		t.Fatal("typo accepted")
	}
}
