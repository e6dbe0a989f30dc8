// A deliberate break of the arrows, for the test that the layer check fails on one:
// the report reaching back into the measuring stage.
#pragma once
#include "harness/measure/runner.h"
