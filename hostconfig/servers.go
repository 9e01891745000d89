package hostconfig

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mcp-gate/mcp-gate/naming"
)

// serversFile is the gate's servers file being edited: entries are added,
// never replaced.
type serversFile struct {
	path    string
	before  []byte // nil when absent
	tree    *Node
	servers *Node
	style   jsonStyle
}

func loadServersFile(path string) (*serversFile, error) {
	sf := &serversFile{path: path}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		sf.tree = NewObject()
		sf.style = jsonStyle{indent: "  ", newline: true}
	case err != nil:
		return nil, fmt.Errorf("reading the servers file: %w", err)
	default:
		sf.before = data
		sf.style = styleOf(data)
		if sf.tree, err = ParseTree(data); err != nil {
			return nil, fmt.Errorf("servers file %s: %w", path, err)
		}
		if sf.tree.Kind != '{' {
			return nil, fmt.Errorf("servers file %s: not a JSON object; expected {\"mcpServers\": {...}}", path)
		}
	}
	sf.servers = sf.tree.Get("mcpServers")
	if sf.servers == nil {
		sf.servers = NewObject()
		sf.tree.Set("mcpServers", sf.servers)
	}
	if sf.servers.Kind != '{' {
		return nil, fmt.Errorf("servers file %s: mcpServers is not an object", path)
	}
	return sf, nil
}

func (sf *serversFile) bytes() []byte {
	if sf.before == nil && len(sf.servers.Keys) == 0 {
		return nil
	}
	return sf.tree.Encode(sf.style.indent, sf.style.newline)
}

// add merges one moved server under a valid key: the host's name made
// valid, and made unique when the key holds a different server. An equal
// entry already there is reused, so a second install changes nothing.
func (sf *serversFile) add(p *Plan, gateName, hostName string, entry *Node) (string, error) {
	budget := naming.Budget(gateName)
	base := sanitizeKey(hostName, naming.MaxServerKeyLen(budget))
	key := base
	for i := 2; ; i++ {
		cur := sf.servers.Get(key)
		if cur == nil {
			break
		}
		if cur.Equal(entry) {
			if key != hostName {
				p.Notes = append(p.Notes, fmt.Sprintf("server %q is already in the servers file as %q", hostName, key))
			}
			return key, nil
		}
		suffix := fmt.Sprintf("-%d", i)
		key = base[:min(len(base), naming.MaxServerKeyLen(budget)-len(suffix))] + suffix
	}
	if err := naming.ValidateServerKey(key, budget); err != nil {
		return "", fmt.Errorf("server %q: %w", hostName, err)
	}
	if key != hostName {
		p.Notes = append(p.Notes, fmt.Sprintf("renamed: server %q is %q in the servers file (a server key is ^[a-z0-9][a-z0-9-]*$, unique, and fits the tool-name budget); its tools are mcp__%s__%s__<tool>", hostName, key, gateName, key))
	}
	sf.servers.Set(key, entry)
	p.state.Added = append(p.state.Added, Record{File: sf.path, Path: []string{"mcpServers"}, Name: key, Value: entry.Compact()})
	return key, nil
}

// sanitizeKey maps a host's server name onto ^[a-z0-9][a-z0-9-]*$ within
// limit characters: lowercase, every other byte a '-', runs of '-' folded.
func sanitizeKey(name string, limit int) string {
	var b strings.Builder
	for _, c := range []byte(strings.ToLower(name)) {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !ok {
			c = '-'
		}
		if c == '-' && (b.Len() == 0 || strings.HasSuffix(b.String(), "-")) {
			continue
		}
		b.WriteByte(c)
	}
	k := strings.TrimRight(b.String(), "-")
	if len(k) > limit {
		k = strings.TrimRight(k[:limit], "-")
	}
	if k == "" {
		k = "server"
	}
	return k
}
