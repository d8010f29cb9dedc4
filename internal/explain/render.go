package explain

import (
	"fmt"
	"io"
	"strings"
)

// minColumn is the narrowest CPU column the plain text uses; with more
// CPUs than fit, rows are listed one after the other, each with its CPU.
const minColumn = 30

func colName(cpu int) string {
	if cpu < 0 {
		return "barrier"
	}
	return fmt.Sprintf("CPU%d", cpu)
}

// WriteText writes the explanation as plain text, one column per CPU, in
// at most width columns (a mail: 80 or 100).
func (ex *Explanation) WriteText(w io.Writer, width int) {
	f := ex.Failure
	fmt.Fprintf(w, "invariant %d (%s) broken\n", f.Invariant, f.Name)
	if ex.Coarse {
		for _, l := range wrap("(the flight recorder's events of the tasks involved: with no deterministic reproduction there is no replay, so no locks and no reads)", width) {
			fmt.Fprintln(w, l)
		}
	}
	if len(ex.Legend) > 0 {
		for _, l := range wrap("tasks: "+strings.Join(ex.Legend, ", "), width) {
			fmt.Fprintln(w, l)
		}
	}
	if len(ex.Before) > 0 {
		fmt.Fprintln(w, "before:")
		for _, b := range ex.Before {
			for _, l := range wrap("  "+b, width) {
				fmt.Fprintln(w, l)
			}
		}
	}
	fmt.Fprintln(w)
	n := len(ex.CPUs)
	switch {
	case n == 0:
		fmt.Fprintf(w, "(no watched step leads to it)\n")
	case (width-2*(n-1))/n < minColumn:
		// Too many CPUs for columns: one block per row, its CPU first.
		for _, r := range ex.Rows {
			for i, l := range r.textLines() {
				prefix := fmt.Sprintf("%-8s", colName(r.CPU))
				if i > 0 {
					prefix = strings.Repeat(" ", 8)
				}
				for j, part := range wrap(l, width-8) {
					if j > 0 {
						prefix = strings.Repeat(" ", 8)
					}
					fmt.Fprintln(w, prefix+part)
				}
			}
		}
	default:
		gap := 2
		colw := (width - gap*(n-1)) / n
		if colw < 16 {
			colw = 16
		}
		col := map[int]int{}
		for i, c := range ex.CPUs {
			col[c] = i
		}
		line := func(cells []string) {
			s := ""
			for i, c := range cells {
				if i < n-1 {
					c = pad(c, colw+gap)
				}
				s += c
			}
			fmt.Fprintln(w, strings.TrimRight(s, " "))
		}
		cells := make([]string, n)
		for i, c := range ex.CPUs {
			cells[i] = colName(c)
		}
		line(cells)
		for i := range cells {
			cells[i] = strings.Repeat("-", colw)
		}
		line(cells)
		for _, r := range ex.Rows {
			k := col[r.CPU]
			for _, l := range r.textLines() {
				for _, part := range wrap(l, colw) {
					for i := range cells {
						cells[i] = ""
					}
					cells[k] = part
					line(cells)
				}
			}
		}
	}
	fmt.Fprintln(w)
	ex.writeVerdict(w, width)
}

// WriteMarkdown writes the explanation as a Markdown table, a column per
// CPU and a row per step.
func (ex *Explanation) WriteMarkdown(w io.Writer) {
	f := ex.Failure
	fmt.Fprintf(w, "**Invariant %d (`%s`) broken.**", f.Invariant, f.Name)
	if len(ex.Legend) > 0 {
		fmt.Fprintf(w, " Tasks: %s.", strings.Join(ex.Legend, ", "))
	}
	fmt.Fprintf(w, "\n\n")
	if len(ex.CPUs) > 0 {
		col := map[int]int{}
		head := make([]string, len(ex.CPUs))
		for i, c := range ex.CPUs {
			col[c] = i
			head[i] = colName(c)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(head, " | "))
		fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(ex.CPUs)))
		for _, r := range ex.Rows {
			cells := make([]string, len(ex.CPUs))
			ls := []string{"**`" + r.Func + "`**"}
			if len(r.Held) > 0 {
				ls[0] += " (holds " + strings.Join(r.Held, ", ") + ")"
			}
			for _, l := range r.Lines {
				ls = append(ls, "`"+strings.ReplaceAll(l, "|", "\\|")+"`")
			}
			cells[col[r.CPU]] = strings.Join(ls, "<br>")
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
		fmt.Fprintln(w)
	}
	ex.writeVerdict(w, 0)
}

// writeVerdict says what broke: the kernel's promise, what happened
// instead, what a user of the machine would see.
func (ex *Explanation) writeVerdict(w io.Writer, width int) {
	f := ex.Failure
	where := "the audit"
	if f.CPU >= 0 {
		where = fmt.Sprintf("CPU%d", f.CPU)
	}
	say := func(label, text string) {
		if text == "" {
			return
		}
		s := label + text
		if width > 0 {
			for _, l := range wrap(s, width) {
				fmt.Fprintln(w, l)
			}
			return
		}
		fmt.Fprintln(w, s)
		fmt.Fprintln(w)
	}
	m := MeaningOf(f.Name)
	say("The kernel promises: ", m.Promise)
	say("What happened ("+where+"): ", f.Message)
	say("What a user would see: ", m.Effect)
}

// textLines renders a row for the plain-text diagram: the function with
// the locks held, then its steps indented.
func (r *Row) textLines() []string {
	head := r.Func
	if len(r.Held) > 0 {
		head += " [" + strings.Join(r.Held, ", ") + "]"
	}
	out := []string{head}
	for _, l := range r.Lines {
		out = append(out, "  "+l)
	}
	return out
}

func pad(s string, n int) string {
	if l := len([]rune(s)); l < n {
		return s + strings.Repeat(" ", n-l)
	}
	return s
}

// wrap breaks s into lines of at most n runes, at spaces where it can;
// continuation lines are indented like the first, plus two.
func wrap(s string, n int) []string {
	if len([]rune(s)) <= n {
		return []string{s}
	}
	indent := len(s) - len(strings.TrimLeft(s, " "))
	var out []string
	cur := ""
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = strings.Repeat(" ", indent) + word
		case len([]rune(cur))+1+len([]rune(word)) <= n:
			cur += " " + word
		default:
			out = append(out, cur)
			cur = strings.Repeat(" ", indent+2) + word
		}
		for len([]rune(cur)) > n {
			r := []rune(cur)
			out = append(out, string(r[:n]))
			cur = strings.Repeat(" ", indent+2) + string(r[n:])
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}
