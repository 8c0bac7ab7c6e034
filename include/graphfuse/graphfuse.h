// The public API in one include.
#pragma once

#include "graphfuse/attribute.h"
#include "graphfuse/builder.h"
#include "graphfuse/cuda_graph.h"
#include "graphfuse/device.h"
#include "graphfuse/dtype.h"
#include "graphfuse/error.h"
#include "graphfuse/graph.h"
#include "graphfuse/op.h"
#include "graphfuse/session.h"
#include "graphfuse/shape.h"
#include "graphfuse/tensor.h"
