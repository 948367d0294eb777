#include "base/status.h"

const char *rg_status_name(rg_status_t status)
{
    switch (status) {
#define RG__STATUS_NAME(name, value, text) case RG_##name: return "RG_" #name;
    RG_STATUS_MAP(RG__STATUS_NAME)
#undef RG__STATUS_NAME
    }
    return "RG_UNKNOWN";
}

const char *rg_status_string(rg_status_t status)
{
    switch (status) {
#define RG__STATUS_TEXT(name, value, text) case RG_##name: return text;
    RG_STATUS_MAP(RG__STATUS_TEXT)
#undef RG__STATUS_TEXT
    }
    return "unknown status";
}
