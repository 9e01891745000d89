package policy

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/glob"

	"github.com/mcp-gate/mcp-gate/policies"
)

// Policy is one parsed, validated and indexed snapshot of a policy file. It
// is immutable after Parse returns and safe for concurrent use by any number
// of goroutines.
type Policy struct {
	source   string
	revision string
	fallback Verdict
	timeout  time.Duration
	via      []string            // approval.via: the channels, in order (nil: the default)
	hostVia  map[string][]string // approval.hosts: channels by the host's clientInfo name
	logOnly  []*glob.Pattern
	pins     pinPolicy
	rules    []*rule
	warnings []Warning

	// decide indexes every rule that can decide a call of each kind; hide
	// indexes only the unconditional denies, which hide names from lists.
	decide [numKinds]index
	hide   [numKinds]index

	fallbackReason string

	// foldedDenies are the unconditional resource denies, matched
	// regardless of case against file: URIs (see foldedresources.go).
	foldedDenies []foldedDeny
}

// rule is one entry of deny, ask or allow, or one element of rules.
type rule struct {
	name   string
	action Verdict
	seq    int // position in the file, counted over all rules
	when   *condition
	reason string
	via    []string // the approval channels this rule asks through (nil: the policy's)
	pats   []*pattern
}

// entry is one pattern of one rule, as the index holds it.
type entry struct {
	pat  *pattern
	rule *rule
	sev  Verdict
	seq  int
	// reason is the decision's reason when the entry decides through an
	// unconditional rule or a condition that held; built once at load so
	// that a decision does not allocate.
	reason string
}

// index holds the entries that apply to one kind of call. Every list is
// sorted by severity (deny first) and then by position in the file, so the
// first match of a list is that list's best candidate, and a search stops
// scanning a list as soon as its entries cannot beat the best found.
type index struct {
	// servers has a bucket for every server key some pattern names
	// literally. When merged is set, each bucket also holds the patterns
	// over several servers (mcp:*:x, mcp:gh*:y, **) that match its key, so
	// a call to a named server looks at its bucket alone.
	servers map[string]*bucket
	merged  bool
	// The patterns over several servers, for servers without a bucket:
	// anyExact by literal name, wild with a name glob.
	anyExact map[string][]*entry
	wild     []*entry

	staged []*entry
}

// empty reports whether the index holds no entry, so that a kind no rule
// speaks of (resources, in most policies) is decided without looking at
// its name. finish puts every entry in a bucket, anyExact or wild.
func (ix *index) empty() bool {
	return len(ix.servers) == 0 && len(ix.anyExact) == 0 && len(ix.wild) == 0
}

// bucket holds the entries that can match calls to one server; they match
// on the name alone.
type bucket struct {
	exact map[string][]*entry // literal names
	pats  []*entry            // name globs
}

// maxMerged bounds the entries copied into buckets: past it, a policy with
// very many patterns over several servers and very many servers keeps them
// in one shared list instead of multiplying its memory.
const maxMerged = 1 << 20

// build indexes the rules, merging patterns over several servers into the
// server buckets while that copies at most mergeLimit entries.
func (p *Policy) build(mergeLimit int) {
	p.fallbackReason = "no rule matched; fallback is " + p.fallback.String()
	for _, r := range p.rules {
		for _, pat := range r.pats {
			e := &entry{pat: pat, rule: r, sev: r.action, seq: r.seq, reason: r.reason}
			if e.reason == "" {
				e.reason = fmt.Sprintf("%s %s (%s)", verbed(r.action), r.name, pat.text)
				if r.when != nil {
					e.reason += " because its condition holds: " + oneLine(r.when.text)
				}
			}
			for k := range Kind(numKinds) {
				if !pat.all && pat.kind != k {
					continue
				}
				governedByDenyOnly := k == KindPrompt || k == KindResource
				if !governedByDenyOnly || (r.action == Deny && r.when == nil) {
					p.decide[k].staged = append(p.decide[k].staged, e)
				}
				if r.action == Deny && r.when == nil {
					p.hide[k].staged = append(p.hide[k].staged, e)
					if k == KindResource {
						p.addFoldedDeny(e)
					}
				}
			}
		}
	}
	for k := range p.decide {
		p.decide[k].finish(mergeLimit)
		p.hide[k].finish(mergeLimit)
	}
}

func verbed(v Verdict) string {
	switch v {
	case Deny:
		return "denied by"
	case Ask:
		return "approval required by"
	}
	return "allowed by"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (b *bucket) add(e *entry) {
	if it := &e.pat.item; !it.any && it.g == nil {
		if b.exact == nil {
			b.exact = map[string][]*entry{}
		}
		b.exact[it.lit] = append(b.exact[it.lit], e)
		return
	}
	b.pats = append(b.pats, e)
}

// finish builds the index from the staged entries.
func (ix *index) finish(mergeLimit int) {
	var multi []*entry
	for _, e := range ix.staged {
		p := e.pat
		switch {
		case p.anyServer || p.serverGlob != nil:
			multi = append(multi, e)
			if !p.item.any && p.item.g == nil {
				if ix.anyExact == nil {
					ix.anyExact = map[string][]*entry{}
				}
				ix.anyExact[p.item.lit] = append(ix.anyExact[p.item.lit], e)
			} else {
				ix.wild = append(ix.wild, e)
			}
		default:
			if ix.servers == nil {
				ix.servers = map[string]*bucket{}
			}
			b := ix.servers[p.serverLit]
			if b == nil {
				b = &bucket{}
				ix.servers[p.serverLit] = b
			}
			b.add(e)
		}
	}
	ix.staged = nil
	ix.merged = len(multi)*len(ix.servers) <= mergeLimit
	if ix.merged {
		for key, b := range ix.servers {
			for _, e := range multi {
				if e.pat.matchServer(key) {
					b.add(e)
				}
			}
		}
	}
	sortEntries := func(l []*entry) { slices.SortStableFunc(l, betterFirst) }
	sortEntries(ix.wild)
	for _, l := range ix.anyExact {
		sortEntries(l)
	}
	for _, b := range ix.servers {
		sortEntries(b.pats)
		for _, l := range b.exact {
			sortEntries(l)
		}
	}
}

// betterFirst orders entries by how they rank in a decision: the most
// restrictive first, then the first in the file.
func betterFirst(a, b *entry) int {
	return cmp.Or(cmp.Compare(b.sev, a.sev), cmp.Compare(a.seq, b.seq))
}

// How the entries of one candidate list are matched against a call.
const (
	matchNone  uint8 = iota // the list was looked up by server and name
	matchItem               // the bucket fixed the server: the name part
	matchParts              // server segment and name part
)

// found is the outcome of a search.
type found struct {
	e *entry
	// condErr is set when the winner's condition failed and counted as true.
	condErr error
	// allowErr is the first failure of an allow rule's condition, which
	// counted as false; the fallback's reason mentions it.
	allowErr   error
	allowEntry *entry
}

// search finds the entry that decides a call: among the entries that match
// and whose condition holds (or fails, for deny and ask), the most
// restrictive, and among those the first in the file. ev is nil for an
// index without conditions.
func (ix *index) search(server, name string, ev *evaluation) found {
	var (
		lists [4][]*entry
		modes [4]uint8
		n     int
	)
	push := func(l []*entry, mode uint8) {
		if len(l) > 0 {
			lists[n], modes[n] = l, mode
			n++
		}
	}
	// Every pattern matches part by part (see pattern), whatever colons
	// the server or the name hold.
	if b := ix.servers[server]; b != nil {
		push(b.exact[name], matchNone)
		push(b.pats, matchItem)
		if !ix.merged {
			push(ix.anyExact[name], matchParts)
			push(ix.wild, matchParts)
		}
	} else {
		push(ix.anyExact[name], matchParts)
		push(ix.wild, matchParts)
	}
	var out found
	for li := range n {
		for _, e := range lists[li] {
			if out.e != nil && betterFirst(e, out.e) >= 0 {
				// The list is sorted: nothing after e can beat the best.
				break
			}
			switch modes[li] {
			case matchItem:
				if !e.pat.item.match(name) {
					continue
				}
			case matchParts:
				if !e.pat.matchParts(server, name) {
					continue
				}
			}
			if e.rule.when == nil {
				out.e, out.condErr = e, nil
				break
			}
			ok, err := ev.eval(e.rule.when)
			if err != nil {
				if e.sev != Allow {
					out.e, out.condErr = e, err
					break
				}
				if out.allowErr == nil {
					out.allowErr, out.allowEntry = err, e
				}
				continue
			}
			if ok {
				out.e, out.condErr = e, nil
				break
			}
		}
	}
	return out
}

// Decide returns the policy's decision about a call. It is a pure function
// of the snapshot and the call (the path functions apart, which read
// symlinks), safe for concurrent use, and does not allocate unless a rule
// with a condition matches the call's name or the call is a resource under
// a policy that denies resources.
//
// When a condition that reads a path took part in the decision, the call is
// decided once per path reading and the most restrictive decision wins (the
// first reading's on a tie), so that neither `..` after a symlink nor a
// negated condition can lead a server somewhere the policy did not allow.
// A resource URI is decided in each of its forms (see resourceForms), the
// most restrictive again winning.
func (p *Policy) Decide(c Call) Decision {
	if c.Kind >= numKinds {
		d := Decision{Revision: p.revision}
		d.Verdict, d.Rule = Deny, "default"
		d.Reason = fmt.Sprintf("the call is of unknown kind %d; expected a tool call, prompt, resource or sampling request", uint8(c.Kind))
		return d
	}
	if c.Kind == KindResource {
		return p.decideResource(c)
	}
	ev := evaluation{args: c.Args, server: c.Server, tool: c.Name, user: c.User}
	d := p.decideReadings(c, &ev)
	if ev.keys == nil || !ev.keys.inexact {
		return d
	}
	// A lookup found an argument only under case folding: a server that
	// reads names exactly sees no such argument. Decide for it too.
	ev.keys.exact = true
	e := p.decideReadings(c, &ev)
	switch {
	case e.Verdict > d.Verdict:
		e.Reason += " (with argument names read exactly as written)"
		return e
	case e.Verdict < d.Verdict:
		d.Reason += " (with argument names read regardless of case, as some servers read them)"
	}
	return d
}

// decideReadings decides a call once, or once per path reading when a
// condition that reads a path took part, keeping the most restrictive
// decision.
func (p *Policy) decideReadings(c Call, ev *evaluation) Decision {
	ev.reading, ev.readPaths = readKernel, false
	d := p.decideOnce(c.Kind, c.Server, c.Name, ev)
	if !ev.readPaths {
		// No condition that reads a path was evaluated: every reading
		// evaluates the same conditions to the same values.
		return d
	}
	var ds [numReadings]Decision
	ds[readKernel] = d
	at := readKernel
	for r := readKernel + 1; r < numReadings; r++ {
		ev.reading = r
		ds[r] = p.decideOnce(c.Kind, c.Server, c.Name, ev)
		if ds[r].Verdict > ds[at].Verdict {
			at = r
		}
	}
	d = ds[at]
	for _, o := range ds {
		if o.Verdict < d.Verdict {
			// Another reading would have let more through: say which one
			// decided.
			d.Reason += " (with paths read with " + at.String() + ")"
			break
		}
	}
	return d
}

// decideResource decides a resource in each form of its URI and keeps the
// most restrictive decision, the first form's on a tie.
func (p *Policy) decideResource(c Call) Decision {
	ix := &p.decide[KindResource]
	ev := evaluation{args: c.Args, server: c.Server, tool: c.Name, user: c.User}
	if ix.empty() {
		return p.decideOnce(KindResource, c.Server, c.Name, &ev)
	}
	forms, err := resourceForms(c.Name)
	if err != nil {
		return Decision{Verdict: Deny, Rule: "default", Revision: p.revision,
			Reason: "the file path of the resource URI cannot be resolved (" + resolveErrorText(err) + "), so whether a deny rule covers it cannot be told"}
	}
	var d Decision
	for i, f := range forms {
		o := p.decideOnce(KindResource, c.Server, f.uri, &ev)
		if i == 0 || o.Verdict > d.Verdict {
			if i > 0 {
				o.Reason += " (the URI read " + f.how + ")"
			}
			d = o
		}
		if d.Verdict == Deny {
			break
		}
	}
	if d.Verdict != Deny {
		if e := p.foldedDenyOf(c.Server, forms); e != nil {
			d = Decision{Verdict: Deny, Rule: e.rule.name, Revision: p.revision,
				Reason: e.reason + " (the URI's file path read regardless of case, as case-insensitive file systems open it)"}
		}
	}
	return d
}

// resolveErrorText says why a path could not be resolved without repeating
// the path, which is the upstream's or the model's text.
func resolveErrorText(err error) string {
	for _, known := range []error{errTooManyLinks, errTooManySteps, errSelfLink, errRelativeFile} {
		if errors.Is(err, known) {
			return known.Error()
		}
	}
	return "a symlink on it cannot be read"
}

// decideOnce searches the index of the kind for the call under the
// evaluation's path reading, and turns what it found into a decision.
func (p *Policy) decideOnce(kind Kind, server, name string, ev *evaluation) Decision {
	d := Decision{Revision: p.revision}
	out := p.decide[kind].search(server, name, ev)
	if e := out.e; e != nil {
		d.Verdict, d.Rule, d.Reason = e.sev, e.rule.name, e.reason
		if out.condErr != nil {
			d.Reason = fmt.Sprintf("%s %s (%s): its condition failed (%s), and a failed condition counts as true for %s rules", verbed(e.sev), e.rule.name, e.pat.text, conditionErrorText(out.condErr), e.sev)
			if e.rule.reason != "" {
				d.Reason += "; the rule's reason: " + e.rule.reason
			}
		}
		return d
	}
	d.Rule = "default"
	switch kind {
	case KindTool:
		d.Verdict, d.Rule, d.Reason = p.fallback, "fallback", p.fallbackReason
	case KindSampling:
		d.Verdict, d.Reason = Deny, "no rule matched; sampling is denied unless the policy allows it"
	case KindPrompt:
		d.Verdict, d.Reason = Allow, "no deny rule matched; prompts are allowed unless the policy denies them"
	case KindResource:
		d.Verdict, d.Reason = Allow, "no deny rule matched; resources are allowed unless the policy denies them"
	}
	if out.allowErr != nil {
		d.Reason += fmt.Sprintf(" (the condition of the allow rule %s failed: %s, which counts as false)", out.allowEntry.rule.name, conditionErrorText(out.allowErr))
	}
	return d
}

// Hidden reports whether an unconditional deny covers the name, so that it
// is left out of tools/list, prompts/list or resources/list. name is the
// tool name, prompt name or resource URI; a resource URI is looked at in
// each of its forms, as Decide looks at it, so that a listed resource is
// hidden exactly when reading it would be refused.
func (p *Policy) Hidden(kind Kind, server, name string) bool {
	if kind >= numKinds {
		return true
	}
	ix := &p.hide[kind]
	if kind != KindResource {
		return ix.search(server, name, nil).e != nil
	}
	if ix.empty() {
		return false
	}
	forms, err := resourceForms(name)
	if err != nil {
		return true
	}
	for _, f := range forms {
		if ix.search(server, f.uri, nil).e != nil {
			return true
		}
	}
	return p.foldedDenyOf(server, forms) != nil
}

// ApprovalTimeout is how long an ask waits for a human before it counts as
// declined.
func (p *Policy) ApprovalTimeout() time.Duration { return p.timeout }

// GuardLogOnly reports whether the result guard only logs, instead of
// refusing, the approval-shaped payloads of the server's results.
func (p *Policy) GuardLogOnly(server string) bool {
	for _, g := range p.logOnly {
		if g.Match(server) {
			return true
		}
	}
	return false
}

// Revision identifies the snapshot: "sha256:" and the first 12 hex digits
// of the file's bytes.
func (p *Policy) Revision() string { return p.revision }

// Source is the file the policy came from, or "embedded default".
func (p *Policy) Source() string { return p.source }

// Fallback is the verdict of a tool call that no rule matches.
func (p *Policy) Fallback() Verdict { return p.fallback }

// Warnings returns the warnings the policy was parsed with.
func (p *Policy) Warnings() []Warning { return slices.Clone(p.warnings) }

// DefaultSource is the Source of the embedded default policy.
const DefaultSource = "embedded default"

var defaultPolicy = sync.OnceValue(func() *Policy {
	data, err := policies.FS.ReadFile("default.yaml")
	if err != nil {
		panic(fmt.Sprintf("policy: the embedded default policy is missing: %v", err))
	}
	p, _, err := Parse(DefaultSource, data, Options{})
	if err != nil {
		// The tests parse it; a broken default is a build defect.
		panic(fmt.Sprintf("policy: the embedded default policy is invalid:\n%v", err))
	}
	return p
})

// Default returns the embedded default policy, policies/default.yaml
// (fallback: ask), which serves when no policy file is given.
func Default() *Policy { return defaultPolicy() }
