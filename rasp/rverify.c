#include "rverify.h"
