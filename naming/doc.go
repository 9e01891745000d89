// Package naming translates between the three spellings of an upstream tool
// (or prompt) name in mcp-gate:
//
//   - the original pair (server, tool): server is the key of the servers file
//     (^[a-z0-9][a-z0-9-]*$), tool is whatever the upstream called it;
//   - the policy name "mcp:<server>:<tool>", built from the original names, so
//     a policy never depends on how a name had to be mangled for a host;
//   - the wire name "<server>__<tool>" that the host sees, over [A-Za-z0-9_-]
//     only and no longer than a budget. Hosts prefix it with "mcp__<gate>__"
//     and cap the whole at 64 characters, so the budget is
//     64 - len("mcp__"+gate+"__") (53 for the default gate name "gate").
//
// # Wire names
//
// The mapping between keys and wire names is a [Table] built from the
// catalog; a wire name is never parsed back into a key on the call path,
// because sanitising and shortening lose information. Each key gets one of
// three forms:
//
//   - plain: "<server>__<tool>" unchanged. A key gets it when its server is a
//     valid server key, its tool name is already over [A-Za-z0-9_-] and the
//     result fits the budget. Plain names cannot collide with each other: a
//     server key has no '_', so the first '_' ends the server part.
//   - sanitised: the same with every character (rune) outside [A-Za-z0-9_-]
//     replaced by '_', e.g. "fs__read_file" for ("fs", "read.file"), kept only
//     when no other key in the table spells the same string (see below).
//   - hashed: the sanitised spelling truncated to leave room for "_" and a
//     suffix of lowercase hex digits of SHA-256(server + "\x00" + tool) over
//     the original names, e.g. "gh__create_a_very_long_…_1a2b3c4d". The suffix
//     has 8 digits; when two hashed candidates are the same string, or a
//     candidate equals a plain or sanitised name in the table, every key
//     involved extends its suffix one digit at a time up to 16 digits. Should
//     even 16 digits collide (a SHA-256 prefix collision, which only a
//     deliberately crafted catalog reaches), the keys concerned take, in
//     sorted key order, the next free 16-digit value after their own. Over
//     budget names and sanitised names that collide get this form.
//
// Precedence when spellings meet: a plain name always keeps its spelling; an
// over-budget key's 8-digit hashed spelling beats a sanitised spelling; two
// or more sanitised keys with the same spelling are all hashed, so none of
// them inherits the others' name.
//
// # Stability guarantees
//
// Build is a pure function of the budget and the set of keys: the order of
// the input and duplicate keys do not change the result. Across catalogs (a
// key K present in both, the budget unchanged):
//
//  1. A plain name never changes, whatever is added or removed.
//  2. A hashed name changes only when another key's spelling is the very
//     same string: a plain or sanitised key spelled exactly like it, or
//     another hashed key whose 8-digit candidate is identical (same truncated
//     head and same first 32 bits of SHA-256; about 2^-32 per such pair).
//     Then it grows by one or more hex digits; it does not take another
//     key's name.
//  3. A sanitised name keeps its spelling until another key claims the
//     same string: a plain key, another sanitised key, or an over-budget key
//     whose 8-digit hashed spelling is that string. It then moves to its
//     hashed form, as stable as 2. Its old spelling goes to the claimant if
//     that is a plain or over-budget key, and to nobody if it is another
//     sanitised key: a sanitised spelling is never handed from one sanitised
//     key to another, and the over-budget claimant needs a 32-bit hash
//     match, so only a crafted catalog gets there.
//  4. For servers whose keys pass [ValidateServerKey], a wire name always
//     starts with "<server>__" (hash extension never eats into the server
//     key), so one server's names can never equal another server's; every
//     renaming in 1-3 stays within one upstream, which published both names.
//
// What is not guaranteed: a host permission rule written against a
// sanitised or hashed wire name may stop matching (3, 2), or, in the case of
// 3 with a plain newcomer, match the newcomer. Policy files are immune: they
// use the original names. Changing the gate name (and so the budget) may
// change every name that is sanitised or hashed, and plain names that no
// longer fit.
//
// # Parsing
//
// [ParseSpelling] is the one place that reads a name back, for
// `mcp-gate explain`, where a human types any of the spellings. It is exact
// for policy names and plain wire names only; [Table.Resolve] uses the
// catalog first and is right for every name the table holds.
package naming
