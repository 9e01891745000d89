package metrics

import (
	"encoding/hex"
	"strings"

	vm "github.com/VictoriaMetrics/metrics"
)

// seriesName is the library's name for one series: the family, then each
// label with its value escaped for the text exposition format, in the
// order given. The library takes the name as written (it validates but
// does not escape), so an unescaped quote, backslash or newline in a
// configured server key or rule name would otherwise end the value early,
// forge another label, split the line, or make the library panic
// ("invalid metric name"). Escaped, every string is a valid value
// (FuzzSeriesName); should the library still refuse a name, the values
// are written in hex instead, so that a configured name can never crash
// the gate through its metrics.
func seriesName(family string, labels, values []string) string {
	name := buildName(family, labels, values, false)
	if validateSeriesName(name) != nil {
		name = buildName(family, labels, values, true)
	}
	return name
}

// validateSeriesName is the check the library panics on.
func validateSeriesName(name string) error { return vm.ValidateMetric(name) }

func buildName(family string, labels, values []string, inHex bool) string {
	var b strings.Builder
	b.WriteString(family)
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l)
		b.WriteString(`="`)
		if inHex {
			b.WriteString("0x" + hex.EncodeToString([]byte(values[i])))
		} else {
			escapeLabelValue(&b, values[i])
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// escapeLabelValue writes v as the text format wants a label value:
// backslash, double quote and line feed escaped as \\, \" and \n, and
// bytes that are not UTF-8 replaced by U+FFFD, since the format is UTF-8
// and a scraper refuses the whole exposition over one bad byte.
func escapeLabelValue(b *strings.Builder, v string) {
	for _, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		default:
			// Ranging over a string yields utf8.RuneError for each byte
			// that is not UTF-8, so this writes U+FFFD in its place.
			b.WriteRune(r)
		}
	}
}

// escapeHelp writes a HELP text as the format wants it: backslash and
// line feed escaped.
func escapeHelp(s string) string { return helpEscaper.Replace(s) }

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
