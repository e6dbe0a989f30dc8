// A deliberate break of the arrows: quant/ including the model above it.
#pragma once
#include "models/model.h"
