package statuscheck_test

import (
	"fmt"

	"github.com/lbd-go/lbd"
	_ "github.com/lbd-go/lbd/statuscheck" // links the HTTP status check statusURL needs
)

// A Connector that asks each TiDB server's status port besides its SQL probe. Without the
// import above, NewConnector refuses the statusURL and names the import.
func Example() {
	c, err := lbd.NewConnector("app:secret@lb(10.0.0.1:4000,10.0.0.2:4000)/orders" +
		"?statusURL=http:%2F%2F{host}:10080%2Fstatus")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println(c.Config().StatusURL)
	// Output: http://{host}:10080/status
}
