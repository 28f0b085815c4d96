package gen

import "testing"

func TestNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in                      string
		exported, snake, unexpt string
	}{
		{"to", "To", "to", "to"},
		{"userID", "UserID", "user_id", "userID"},
		{"url", "URL", "url", "url"},
		{"HTTPServer", "HTTPServer", "http_server", "httpServer"},
		{"page_size", "PageSize", "page_size", "page_size"},
		{"SendEmail", "SendEmail", "send_email", "sendEmail"},
		{"URL", "URL", "url", "url"},
		{"X", "X", "x", "x"},
		{"v2", "V2", "v2", "v2"},
		{"body", "Body", "body", "body"},
	}
	for _, tt := range tests {
		if got := exportedName(tt.in); got != tt.exported {
			t.Errorf("exportedName(%q) = %q, want %q", tt.in, got, tt.exported)
		}
		if got := snakeName(tt.in); got != tt.snake {
			t.Errorf("snakeName(%q) = %q, want %q", tt.in, got, tt.snake)
		}
		if got := unexportedName(tt.in); got != tt.unexpt {
			t.Errorf("unexportedName(%q) = %q, want %q", tt.in, got, tt.unexpt)
		}
	}
}
