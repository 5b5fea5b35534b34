// Package volcanocrd only anchors the volcano.sh/apis requirement of this module, whose types
// build.sh turns into CustomResourceDefinitions with controller-gen.
package volcanocrd

import _ "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
