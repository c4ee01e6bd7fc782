// Package browsertest tests the status page (package github.com/lbd-go/lbd/status) in a real
// headless Chromium, driven over the DevTools protocol by chromedp. It is a module of its own,
// so that the root module does not pay for chromedp. The test is skipped, saying so, where no
// Chromium is installed (Debian: apt-get install chromium); with LBD_REQUIRE_CHROMIUM set it
// fails instead, as CI runs it.
package browsertest
