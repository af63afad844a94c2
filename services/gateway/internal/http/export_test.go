package http

import "testing"

func TestCSVEscapesAndDefusesFormulas(t *testing.T) {
	got, err := csvOf([][]string{
		{"value", "clicks"},
		{"=HYPERLINK(\"http://evil\")", "1"},
		{"+1", "2"}, {"-1", "3"}, {"@SUM(A1)", "4"}, {"\tx", "5"},
		{"a,b", "6"}, {"say \"hi\"", "7"}, {"line\nbreak", "8"}, {"plain", "9"}, {"", "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "value,clicks\r\n" +
		"\"'=HYPERLINK(\"\"http://evil\"\")\",1\r\n" +
		"'+1,2\r\n'-1,3\r\n'@SUM(A1),4\r\n'\tx,5\r\n" +
		"\"a,b\",6\r\n\"say \"\"hi\"\"\",7\r\n\"line\r\nbreak\",8\r\nplain,9\r\n,0\r\n"
	if string(got) != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}
