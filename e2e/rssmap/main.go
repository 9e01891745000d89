// Command rssmap says which packages the resident pages of an mcp-gate
// process belong to: it starts the gate (or reads a running one), drives it
// to the state to measure, reads which pages of the binary's mappings are
// present (/proc/PID/pagemap, bit 63; root is needed for the page frame
// numbers but not for the present bit) and attributes each present byte to
// a symbol of the unstripped binary and so to a Go package:
//
//   - .text by function symbols;
//   - .rodata's type descriptors by the DWARF runtime-type attribute of
//     each type, go:func.* (stack and argument maps, inline trees) by the
//     funcdata offsets of each function in the pclntab, other symbols by
//     the ELF symbol table;
//   - .gopclntab by function: its name, its _func record and its
//     pc-value tables (decoded to find their lengths), with the table's
//     header, the file and compilation-unit tables as their own rows.
//
// The kernel maps file pages around a fault (fault-around), so a page is
// resident because something near it was touched, not necessarily itself;
// the attribution is of what is resident, which is what VmHWM counts. Who
// touched each 64 KB window first is what the gate's page faults say: with
// fault-around each window faults once, so
//
//	perf record -e page-faults -c 1 -d -g -o pf.data -- rssmap -gate BIN
//	perf script -i pf.data -F comm,addr,ip,sym --comm NAME >pf.txt
//	rssmap -gate BIN -faults pf.txt
//
// counts every window's first touch by cause (a package's initialiser,
// runtime.itabsinit, a stack copy, the serve path below main.run).
//
// Usage (Linux only):
//
//	go build -o /tmp/gate ./cmd/mcp-gate      # unstripped: symbols and DWARF
//	go run ./e2e/rssmap -gate /tmp/gate -echo /tmp/echo -state idle
//	go run ./e2e/rssmap -gate /tmp/gate -pid 1234
//
// The states: start (serve running, no message read), idle (initialize,
// tools/list and -calls echo calls, as e2e/bench measures "peak RSS,
// idle"). -syms BIN attributes with another binary of the same layout (the
// stripped build of the same source has the same addresses).
package main

import (
	"bytes"
	"cmp"
	"debug/buildinfo"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-gate/mcp-gate/e2e/loadgen"
)

func main() {
	gate := flag.String("gate", "", "mcp-gate binary to run (and to read symbols from unless -syms)")
	syms := flag.String("syms", "", "unstripped binary with the same layout as -gate, for the symbols")
	echo := flag.String("echo", "", "echo server binary (default: built from this checkout)")
	pid := flag.Int("pid", 0, "read this running process instead of starting one")
	state := flag.String("state", "idle", "start or idle")
	calls := flag.Int("calls", 50, "echo calls in state idle")
	top := flag.Int("top", 40, "packages to list")
	symTop := flag.Int("symbols", 0, "also list this many symbols with the most resident bytes")
	faults := flag.String("faults", "", "instead of reading a process, read `perf script -F comm,addr,ip,sym` output of the gate's page faults from this file (- for stdin) and say who touched each window first")
	where := flag.String("where", "", "only name the owners of these comma-separated hex addresses (with -gate for the symbols) and exit")
	hold := flag.Duration("hold", 0, "keep the gate running this long after the report (to inspect it by hand)")
	flag.BoolVar(&gateStderr, "stderr", false, "pass the gate's stderr through (its log; GODEBUG=gctrace=1 and the like)")
	flag.Parse()
	holdFor = *hold
	if *faults != "" {
		if err := firstTouches(cmp.Or(*syms, *gate), *faults, *top); err != nil {
			fmt.Fprintln(os.Stderr, "rssmap:", err)
			os.Exit(1)
		}
		return
	}
	if *where != "" {
		if err := whereIs(cmp.Or(*syms, *gate), *where); err != nil {
			fmt.Fprintln(os.Stderr, "rssmap:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*gate, *syms, *echo, *pid, *state, *calls, *top, *symTop); err != nil {
		fmt.Fprintln(os.Stderr, "rssmap:", err)
		os.Exit(1)
	}
}

// gateStderr: the gate's stderr goes to ours.
var gateStderr bool

// holdFor is how long the gate is kept after the report.
var holdFor time.Duration

func run(gate, syms, echo string, pid int, state string, calls, top, symTop int) error {
	if gate == "" {
		return errors.New("-gate is required")
	}
	if syms == "" {
		syms = gate
	}
	if pid == 0 {
		dir, err := os.MkdirTemp("", "rssmap-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if echo == "" {
			if err := loadgen.BuildMissing(dir, new(string), &echo); err != nil {
				return err
			}
		}
		c, err := startGate(dir, gate, echo, state, calls)
		if err != nil {
			return err
		}
		defer c.Close()
		pid = c.Pid()
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(status), "\n") {
		for _, k := range []string{"VmHWM", "VmRSS", "RssAnon", "RssFile"} {
			if strings.HasPrefix(line, k+":") {
				fmt.Println(strings.Join(strings.Fields(line), " "))
			}
		}
	}
	a, err := newAttributor(syms)
	if err != nil {
		return err
	}
	pages, anon, err := residentPages(pid, gate)
	if err != nil {
		return err
	}
	fmt.Printf("resident pages of the binary's mappings: %d (%.2f MB); other mappings: %.2f MB\n",
		len(pages), float64(len(pages)*pageSize)/1e6, float64(anon)/1e6)
	for _, p := range pages {
		a.page(p)
	}
	a.report(os.Stdout, top, symTop)
	if holdFor > 0 {
		fmt.Printf("holding process %d for %s\n", pid, holdFor)
		time.Sleep(holdFor)
	}
	return nil
}

func startGate(dir, gate, echo, state string, calls int) (*loadgen.Client, error) {
	servers, err := loadgen.EchoServers(dir, echo)
	if err != nil {
		return nil, err
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("version: 1\nfallback: deny\nallow:\n  - \"mcp:echo:*\"\n"), 0o600); err != nil {
		return nil, err
	}
	auditDir := filepath.Join(dir, "audit")
	if err := os.Mkdir(auditDir, 0o700); err != nil {
		return nil, err
	}
	cmd := exec.Command(gate, "serve", "--servers", servers, "--policy", policy,
		"--audit-log", filepath.Join(auditDir, "audit.jsonl"))
	cmd.Env = loadgen.PrivateDirs(loadgen.WithoutGOMAXPROCS(os.Environ()), dir)
	if gateStderr {
		cmd.Stderr = os.Stderr
	}
	c, err := loadgen.Start(cmd)
	if err != nil {
		return nil, err
	}
	switch state {
	case "start":
	case "idle":
		if err := c.Initialize(); err != nil {
			c.Close()
			return nil, err
		}
		if _, err := c.ListTools(); err != nil {
			c.Close()
			return nil, err
		}
		echoCall := loadgen.Call{Tool: "echo__echo", Args: `{"text":"hello"}`, MinBytes: len(`"hello"`)}
		for range calls {
			if err := c.Call(echoCall); err != nil {
				c.Close()
				return nil, err
			}
		}
	default:
		c.Close()
		return nil, fmt.Errorf("state %q: want start or idle", state)
	}
	time.Sleep(300 * time.Millisecond) // let the gate settle
	return c, nil
}

const pageSize = 4096

// residentPages returns the virtual addresses of the present pages of the
// mappings of the file bin in process pid, and the resident bytes of the
// process's other mappings (anonymous memory, the vdso).
func residentPages(pid int, bin string) ([]uint64, int, error) {
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, 0, err
	}
	want, _ = filepath.Abs(want)
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, 0, err
	}
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, 0, err
	}
	defer pm.Close()
	var pages []uint64
	other := 0
	for _, line := range strings.Split(strings.TrimSpace(string(maps)), "\n") {
		f := strings.Fields(line)
		lo, hi, _ := strings.Cut(f[0], "-")
		start, err := strconv.ParseUint(lo, 16, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("maps line %q: %w", line, err)
		}
		end, err := strconv.ParseUint(hi, 16, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("maps line %q: %w", line, err)
		}
		n := (end - start) / pageSize
		if len(f) >= 6 && f[5] == "[vsyscall]" {
			continue // not readable through pagemap
		}
		buf := make([]byte, 8*n)
		if _, err := pm.ReadAt(buf, int64(start/pageSize*8)); err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, fmt.Errorf("pagemap of %s: %w", line, err)
		}
		mine := len(f) >= 6 && f[5] == want
		if mine {
			// How many pages of each aligned 64 KB window are present:
			// a window with all 16 is what fault-around leaves after one
			// touch.
			var hist [17]int
			for w := uint64(0); w < n; w += 16 {
				c := 0
				for i := w; i < min(w+16, n); i++ {
					c += int(binary.LittleEndian.Uint64(buf[8*i:]) >> 63)
				}
				hist[c]++
			}
			fmt.Printf("%s %s: 64 KB windows by present pages 0..16: %v\n", f[0], f[1], hist)
		}
		for i := range n {
			e := binary.LittleEndian.Uint64(buf[8*i:])
			if e>>63&1 == 0 {
				continue
			}
			if mine {
				pages = append(pages, start+i*pageSize)
			} else {
				other += pageSize
			}
		}
	}
	if len(pages) == 0 {
		return nil, 0, fmt.Errorf("no resident page of %s in process %d (is it the running binary?)", want, pid)
	}
	return pages, other, nil
}

// A span is a range of addresses owned by a name (a symbol, a function's
// part of the pclntab, a type descriptor).
type span struct {
	lo, hi uint64
	name   string
}

type attributor struct {
	modules  []string // the main module and its dependencies, from the build info
	regions  []span   // the parts of .gopclntab, reported as sections of their own
	sections []*elf.Section
	spans    map[string][]span // by section name, sorted by lo
	bySec    map[string]int    // resident bytes by section
	byPkg    map[string]int    // by "section package"
	bySym    map[string]int
}

func newAttributor(path string) (*attributor, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a := &attributor{spans: map[string][]span{}, bySec: map[string]int{}, byPkg: map[string]int{}, bySym: map[string]int{}}
	if bi, err := buildinfo.ReadFile(path); err == nil {
		a.modules = append(a.modules, bi.Main.Path)
		for _, d := range bi.Deps {
			a.modules = append(a.modules, d.Path)
		}
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Addr != 0 {
			a.sections = append(a.sections, s)
		}
	}
	symbols, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("%s: %w (build it without -s)", path, err)
	}
	for _, s := range symbols {
		if s.Size == 0 {
			continue
		}
		if sec := a.section(s.Value); sec != nil {
			a.spans[sec.Name] = append(a.spans[sec.Name], span{s.Value, s.Value + s.Size, s.Name})
		}
	}
	if err := a.types(f); err != nil {
		return nil, err
	}
	if err := a.pclntab(f, symbols); err != nil {
		return nil, err
	}
	for k, v := range a.spans {
		slices.SortFunc(v, func(x, y span) int { return cmp.Compare(x.lo, y.lo) })
		a.spans[k] = v
	}
	return a, nil
}

func (a *attributor) section(addr uint64) *elf.Section {
	for _, s := range a.sections {
		if addr >= s.Addr && addr < s.Addr+s.Size {
			return s
		}
	}
	return nil
}

// types adds a span for each type descriptor in .rodata, from the DWARF
// attribute the Go linker gives each type (DW_AT_go_runtime_type, 0x2904):
// the descriptor's address. A descriptor ends where the next begins.
func (a *attributor) types(f *elf.File) error {
	d, err := f.DWARF()
	if err != nil {
		return fmt.Errorf("DWARF: %w (build it without -w)", err)
	}
	const goRuntimeType = dwarf.Attr(0x2904)
	type typ struct {
		addr uint64
		name string
	}
	var ts []typ
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			break
		}
		v, ok := e.Val(goRuntimeType).(uint64)
		if !ok || v == 0 {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		ts = append(ts, typ{v, name}) // an offset from runtime.types
	}
	var types, strs uint64
	syms, _ := f.Symbols()
	for _, s := range syms {
		switch s.Name {
		case "go:string.*":
			strs = s.Value
		case "runtime.types":
			types = s.Value
		}
	}
	if types == 0 || strs == 0 {
		return errors.New("no runtime.types or go:string.* symbol")
	}
	slices.SortFunc(ts, func(x, y typ) int { return cmp.Compare(x.addr, y.addr) })
	for i, t := range ts {
		end := strs
		if i+1 < len(ts) {
			end = types + ts[i+1].addr
		}
		lo := types + t.addr
		if lo >= end || end-lo > 1<<16 {
			continue
		}
		a.spans[".rodata"] = append(a.spans[".rodata"], span{lo, end, "type:" + t.name})
	}
	return nil
}

// pclntab adds spans for each function's parts of .gopclntab and of
// go:func.*, read as the runtime lays them out (internal/abi, the Go 1.20+
// format).
func (a *attributor) pclntab(f *elf.File, symbols []elf.Symbol) error {
	sec := f.Section(".gopclntab")
	data, err := sec.Data()
	if err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(data) != 0xfffffff1 || data[7] != 8 {
		return fmt.Errorf("pclntab magic %#x, pointer size %d: not the Go 1.20+ layout on a 64-bit target", binary.LittleEndian.Uint32(data), data[7])
	}
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(data[8+8*i:]) }
	nfunc := int(word(0))
	funcname, cu, filetab, pctab, pcln := word(3), word(4), word(5), word(6), word(7)
	base := sec.Addr
	add := func(lo, hi uint64, name string) {
		if hi > lo {
			a.spans[".gopclntab"] = append(a.spans[".gopclntab"], span{base + lo, base + hi, name})
		}
	}
	for _, r := range []span{{0, funcname, "header"}, {funcname, cu, "funcnametab"}, {cu, filetab, "cutab"},
		{filetab, pctab, "filetab"}, {pctab, pcln, "pctab"}} {
		a.regions = append(a.regions, span{base + r.lo, base + r.hi, ".gopclntab " + r.name})
	}
	add(0, funcname, "pclntab:header")
	add(cu, filetab, "pclntab:cutab")
	add(filetab, pctab, "pclntab:filetab")
	add(pcln, pcln+uint64(nfunc+1)*8, "pclntab:functab")
	var gofunc uint64
	for _, s := range symbols {
		if s.Name == "go:func.*" {
			gofunc = s.Value
		}
	}
	type fd struct {
		off  uint64
		name string
	}
	var funcdata []fd
	u32 := func(off uint64) uint32 { return binary.LittleEndian.Uint32(data[off:]) }
	for i := range nfunc {
		funcoff := uint64(u32(pcln + uint64(i)*8 + 4))
		fo := pcln + funcoff
		nameOff := uint64(u32(fo + 4))
		nameStart := funcname + nameOff
		nameEnd := nameStart + uint64(bytes.IndexByte(data[nameStart:], 0)) + 1
		name := string(data[nameStart : nameEnd-1])
		add(nameStart, nameEnd, name)
		npcdata := uint64(u32(fo + 28))
		nfuncdata := uint64(data[fo+43])
		add(fo, fo+44+4*npcdata+4*nfuncdata, name)
		tables := []uint32{u32(fo + 16), u32(fo + 20), u32(fo + 24)}
		for j := range npcdata {
			tables = append(tables, u32(fo+44+4*j))
		}
		for _, t := range tables {
			if t == 0 {
				continue
			}
			start := pctab + uint64(t)
			add(start, start+pcvalueLen(data[start:]), name)
		}
		for j := range nfuncdata {
			off := u32(fo + 44 + 4*npcdata + 4*j)
			if off != ^uint32(0) && gofunc != 0 {
				funcdata = append(funcdata, fd{gofunc + uint64(off), name})
			}
		}
	}
	end := base + sec.Size
	if gofunc > base+pcln && gofunc < end {
		a.regions = append(a.regions, span{base + pcln, gofunc, ".gopclntab functab, _func"}, span{gofunc, end, ".gopclntab go:func.* (funcdata)"})
	} else {
		a.regions = append(a.regions, span{base + pcln, end, ".gopclntab functab, _func"})
	}
	slices.SortFunc(funcdata, func(x, y fd) int { return cmp.Compare(x.off, y.off) })
	funcdata = slices.CompactFunc(funcdata, func(x, y fd) bool { return x.off == y.off })
	var gofuncEnd uint64
	for _, s := range symbols {
		if s.Name == "go:func.*" {
			gofuncEnd = s.Value + s.Size
		}
	}
	// go:func.* is one symbol in the table; its parts replace it.
	in := a.section(gofunc)
	if in == nil {
		return errors.New("no go:func.* symbol")
	}
	kept := a.spans[in.Name][:0]
	for _, s := range a.spans[in.Name] {
		if s.name != "go:func.*" {
			kept = append(kept, s)
		}
	}
	a.spans[in.Name] = kept
	for i, d := range funcdata {
		end := gofuncEnd
		if i+1 < len(funcdata) {
			end = funcdata[i+1].off
		}
		a.spans[in.Name] = append(a.spans[in.Name], span{d.off, end, d.name})
	}
	return nil
}

// pcvalueLen is the length of the pc-value table at the start of b: pairs
// of varints (value delta, pc delta) ended by a zero value delta after the
// first pair.
func pcvalueLen(b []byte) uint64 {
	n := 0
	first := true
	for n < len(b) {
		uv, k := binary.Uvarint(b[n:])
		if k <= 0 {
			return uint64(n)
		}
		if uv == 0 && !first {
			return uint64(n + k)
		}
		n += k
		first = false
		_, k = binary.Uvarint(b[n:])
		if k <= 0 {
			return uint64(n)
		}
		n += k
	}
	return uint64(n)
}

// page attributes the resident page at addr.
func (a *attributor) page(addr uint64) {
	lo, hi := addr, addr+pageSize
	for lo < hi {
		sec := a.section(lo)
		if sec == nil {
			// Between sections or past the last: the ELF header and
			// padding.
			next := hi
			for _, s := range a.sections {
				if s.Addr > lo && s.Addr < next {
					next = s.Addr
				}
			}
			a.bySec["(headers, padding)"] += int(next - lo)
			a.byPkg["(headers, padding)"] += int(next - lo)
			lo = next
			continue
		}
		end := min(hi, sec.Addr+sec.Size)
		a.bySec[sec.Name] += int(end - lo)
		for _, r := range a.regions {
			if r.lo < end && r.hi > lo {
				a.bySec[r.name] += int(min(r.hi, end) - max(r.lo, lo))
			}
		}
		spans := a.spans[sec.Name]
		i := sort.Search(len(spans), func(i int) bool { return spans[i].hi > lo })
		covered := uint64(0)
		for ; i < len(spans) && spans[i].lo < end; i++ {
			s := spans[i]
			n := min(s.hi, end) - max(s.lo, lo)
			if s.lo >= end || s.hi <= lo {
				continue
			}
			covered += n
			a.byPkg[sec.Name+" "+pkgOf(s.name)] += int(n)
			a.bySym[sec.Name+" "+s.name] += int(n)
		}
		if rest := int(end-lo) - int(covered); rest > 0 {
			a.byPkg[sec.Name+" ?"] += rest
		}
		lo = end
	}
}

// firstTouches reads perf's page-fault samples of a gate (perf record -e
// page-faults -c 1 -d -g; perf script -F comm,addr,ip,sym --comm NAME) and
// counts the faults on the binary's read-only sections by cause: the
// package whose initialiser ran, the call below main.run, or the root of
// the runtime's own work (runtime.schedinit, a stack copy). With
// fault-around each fault maps a 64 KB window, so a cause's count is the
// windows it touched first.
func firstTouches(bin, path string, top int) error {
	a, err := newAttributor(bin)
	if err != nil {
		return err
	}
	in := os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	type sample struct {
		addr  uint64
		chain []string // leaf first
	}
	var samples []sample
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
			if len(f) < 2 {
				continue
			}
			addr, err := strconv.ParseUint(f[1], 16, 64)
			if err != nil {
				return fmt.Errorf("perf script line %q: want comm and addr first: %w", line, err)
			}
			samples = append(samples, sample{addr: addr})
			continue
		}
		if len(samples) > 0 && len(f) >= 2 {
			samples[len(samples)-1].chain = append(samples[len(samples)-1].chain, f[1])
		}
	}
	counts := map[string]int{}
	bySec := map[string]int{}
	for _, s := range samples {
		sec := a.section(s.addr)
		if sec == nil || sec.Flags&elf.SHF_WRITE != 0 {
			continue // anonymous memory, or the data segment
		}
		bySec[sec.Name]++
		counts[faultCause(s.chain)]++
	}
	fmt.Println("faults on the binary's read-only pages (each a 64 KB window):")
	for _, kv := range sorted(bySec) {
		fmt.Printf("%6d  %s\n", kv.v, kv.k)
	}
	kinds := map[string]int{}
	for c, n := range counts {
		k, _, _ := strings.Cut(c, " ")
		switch {
		case strings.Contains(c, "runtime.copystack"):
			k = "stack copies"
		case strings.Contains(c, "runtime.rt0_go"):
			k = "the runtime's start (schedinit: itabs, moduledata)"
		case k == "init":
			k = "package initialisers"
		case k == "main:":
			k = "main (serve)"
		case k == "root:":
			k = "other goroutines"
		}
		kinds[k] += n
	}
	fmt.Println("in short:")
	for _, kv := range sorted(kinds) {
		fmt.Printf("%6d  %s\n", kv.v, kv.k)
	}
	fmt.Println("by who touched the window first:")
	for i, kv := range sorted(counts) {
		if i == top {
			break
		}
		fmt.Printf("%6d  %s\n", kv.v, kv.k)
	}
	return nil
}

// faultCause names what a fault's call chain (leaf first) was doing. A
// fault on a function's first instruction loses that function's caller
// (it has no frame yet), so the chain is read from its root.
func faultCause(chain []string) string {
	root := slices.Clone(chain)
	slices.Reverse(root)
	if i := slices.Index(root, "runtime.main"); i >= 0 {
		rest := slices.DeleteFunc(root[i+1:], func(f string) bool { return strings.HasPrefix(f, "runtime.doInit") })
		switch {
		case len(rest) == 0:
			return "runtime.main"
		case rest[0] == "main.main":
			return "main: " + strings.Join(rest[1:min(len(rest), 4)], " > ")
		case strings.Contains(rest[0], ".init"):
			return "init " + pkgOf(rest[0])
		}
		return "runtime.main > " + rest[0]
	}
	return "root: " + strings.Join(root[:min(len(root), 3)], " > ")
}

// whereIs prints the section and the owner (symbol, function's pclntab
// part, type) of each address in list.
func whereIs(bin, list string) error {
	a, err := newAttributor(bin)
	if err != nil {
		return err
	}
	for _, f := range strings.Split(list, ",") {
		addr, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(f), "0x"), 16, 64)
		if err != nil {
			return fmt.Errorf("address %q: %w", f, err)
		}
		sec := a.section(addr)
		if sec == nil {
			fmt.Printf("%#x  (no section)\n", addr)
			continue
		}
		owner := "?"
		for _, s := range a.spans[sec.Name] {
			if s.lo <= addr && addr < s.hi {
				owner = s.name
				break
			}
		}
		region := sec.Name
		for _, r := range a.regions {
			if r.lo <= addr && addr < r.hi {
				region = r.name
			}
		}
		fmt.Printf("%#x  %s  %s\n", addr, region, owner)
	}
	return nil
}

// pkgOf is the package a symbol belongs to: what precedes the first dot
// after the last slash, with the prefixes of types and closures removed.
func pkgOf(name string) string {
	if strings.HasPrefix(name, "go:string") || strings.HasPrefix(name, "go:func.*") {
		return name
	}
	for _, p := range []string{"type:", "go:itab.", "noalg.", "*", "[]", "map[", "chan ", "func("} {
		for strings.HasPrefix(name, p) {
			name = strings.TrimPrefix(name, p)
		}
	}
	if strings.HasPrefix(name, "struct {") || strings.HasPrefix(name, "interface {") {
		return "(anonymous struct and interface types)"
	}
	if strings.HasPrefix(name, "pclntab:") {
		return name
	}
	head := name
	if i := strings.IndexAny(head, "[("); i >= 0 {
		head = head[:i]
	}
	slash := strings.LastIndex(head, "/")
	if dot := strings.Index(head[slash+1:], "."); dot >= 0 {
		return head[:slash+1+dot]
	}
	return head
}

func (a *attributor) report(w io.Writer, top, symTop int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "KB\tsection\t")
	for _, kv := range sorted(a.bySec) {
		fmt.Fprintf(tw, "%d\t%s\t\n", kv.v/1024, kv.k)
	}
	tw.Flush()
	// By package across sections, then the top rows by section.
	all := map[string]int{}
	for k, v := range a.byPkg {
		_, p, _ := strings.Cut(k, " ")
		if p == "" {
			p = k
		}
		all[p] += v
	}
	byMod := map[string]int{}
	for p, v := range all {
		byMod[a.moduleOf(p)] += v
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "KB\tmodule (all sections)\t")
	for _, kv := range sorted(byMod) {
		fmt.Fprintf(tw, "%d\t%s\t\n", kv.v/1024, kv.k)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "KB\tpackage (all sections)\t")
	for i, kv := range sorted(all) {
		if i == top {
			break
		}
		fmt.Fprintf(tw, "%d\t%s\t\n", kv.v/1024, kv.k)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "KB\tsection package\t")
	for i, kv := range sorted(a.byPkg) {
		if i == top {
			break
		}
		fmt.Fprintf(tw, "%d\t%s\t\n", kv.v/1024, kv.k)
	}
	tw.Flush()
	if symTop > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "bytes\tsection symbol\t")
		for i, kv := range sorted(a.bySym) {
			if i == symTop {
				break
			}
			fmt.Fprintf(tw, "%d\t%s\t\n", kv.v, kv.k)
		}
		tw.Flush()
	}
}

// moduleOf is the module a package belongs to: the longest module path
// of the build that prefixes it; "std" for the rest that look like
// standard-library paths, the package itself otherwise (the runtime's
// unattributed rows).
func (a *attributor) moduleOf(pkg string) string {
	best := ""
	for _, m := range a.modules {
		if (pkg == m || strings.HasPrefix(pkg, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	switch {
	case best != "":
		return best
	case pkg == "?" || strings.HasPrefix(pkg, "pclntab:") || strings.HasPrefix(pkg, "go:") || strings.HasPrefix(pkg, "("):
		return pkg
	}
	return "std"
}

type kv struct {
	k string
	v int
}

func sorted(m map[string]int) []kv {
	var out []kv
	for k, v := range m {
		if len(k) > 120 {
			k = k[:117] + "..."
		}
		out = append(out, kv{k, v})
	}
	slices.SortFunc(out, func(x, y kv) int {
		if c := cmp.Compare(y.v, x.v); c != 0 {
			return c
		}
		return cmp.Compare(x.k, y.k)
	})
	return out
}
