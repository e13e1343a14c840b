package odata

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files under testdata with the actual output")

// A golden file is a sequence of cases separated by blank lines:
//
//	command
//	input line(s)
//	----
//	output line(s)
//
// Lines starting with '#' and blank lines between cases are comments.
// Outputs never contain blank lines.
type ddCase struct {
	cmd    string
	input  []string
	output string
	line   int
}

func readDataDriven(t testing.TB, path string) (chunks []any) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" || strings.HasPrefix(l, "#") {
			chunks = append(chunks, l)
			continue
		}
		c := &ddCase{cmd: l, line: i + 1}
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			c.input = append(c.input, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: case without ----", path, c.line)
		}
		var out []string
		for i++; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		c.output = strings.Join(out, "\n")
		chunks = append(chunks, c)
		if i < len(lines) {
			chunks = append(chunks, "") // the blank line that ended the case
		}
	}
	return chunks
}

// runDataDriven runs fn on every case of a golden file and compares its
// result with the recorded output, or records it with -rewrite.
func runDataDriven(t *testing.T, path string, fn func(t *testing.T, c *ddCase) string) {
	chunks := readDataDriven(t, path)
	var sb strings.Builder
	for _, ch := range chunks {
		c, ok := ch.(*ddCase)
		if !ok {
			sb.WriteString(ch.(string) + "\n")
			continue
		}
		got := strings.TrimRight(fn(t, c), "\n")
		if strings.Contains(got, "\n\n") || got == "" {
			t.Fatalf("%s:%d: output must be non-empty without blank lines: %q", path, c.line, got)
		}
		if *rewrite {
			c.output = got
		} else if got != c.output {
			t.Errorf("%s:%d: %s %q\n got: %s\nwant: %s", path, c.line, c.cmd, c.input, got, c.output)
		}
		sb.WriteString(c.cmd + "\n")
		for _, in := range c.input {
			sb.WriteString(in + "\n")
		}
		sb.WriteString("----\n" + c.output + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
