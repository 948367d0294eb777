/* What `ucx_info -c` prints (ucx_info is in a package of its own): UCP's configuration
 * read from the environment (ucp_config_read fails on a value it cannot parse), then
 * UCX's transports loaded and every configuration table filled from the environment and
 * printed as NAME=VALUE lines. A table with a value UCX cannot parse is left out, so a
 * setting that shows here with its value was taken. tests/test_emit.py builds it with
 * -lucp -luct -lucs. */
#include <stdio.h>
#include <ucs/config/global_opts.h>
#include <ucs/config/parser.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

int main(void)
{
    uct_component_h *components;
    ucp_config_t *config;
    unsigned count;

    if (ucp_config_read(NULL, NULL, &config) != UCS_OK) {
        fprintf(stderr, "ucx_config: ucp_config_read failed\n");
        return 1;
    }
    ucp_config_print(config, stdout, NULL, UCS_CONFIG_PRINT_CONFIG);
    ucp_config_release(config);

    if (uct_query_components(&components, &count) != UCS_OK) {
        fprintf(stderr, "ucx_config: uct_query_components failed\n");
        return 1;
    }
    ucs_config_parser_print_all_opts(stdout, "UCX_", UCS_CONFIG_PRINT_CONFIG,
                                     &ucs_config_global_list);
    uct_release_component_list(components);
    return 0;
}
