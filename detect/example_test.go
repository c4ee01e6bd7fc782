package detect_test

import (
	"fmt"

	"github.com/lbd-go/lbd/detect"
)

func ExampleSurplus() {
	// Three nodes hold ten connections each; a fourth has just come back up.
	loads := []detect.Load{
		{Node: "a", Open: 10, Idle: 10},
		{Node: "b", Open: 10, Idle: 10},
		{Node: "c", Open: 10, Idle: 10},
		{Node: "d", Open: 0, Idle: 0},
	}
	// 30 connections over 4 nodes: two nodes may keep 8, two keep 7.
	// The ceil shares go to the fullest nodes, the first ones among equals.
	fmt.Println(detect.Surplus(loads))

	// Once the pool has refilled the emptiest node, nothing is left to do.
	loads[0].Open, loads[1].Open, loads[2].Open, loads[3].Open = 8, 8, 7, 7
	fmt.Println(detect.Surplus(loads) == nil)
	// Output:
	// [2 2 3 0]
	// true
}
