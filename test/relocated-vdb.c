/*
 * libacmlbm tests -- the OpenVDB writer module found from a moved tree
 * (relocate.sh): write a small domain's fields as OUT.vdb, then print which
 * libacmlbm and which writer module the process mapped, from /proc/self/maps,
 * so that the script can check that both came from the tree it moved:
 *
 *   lib <path of the mapped libacmlbm.so*>
 *   module <path of the mapped acmlbm-vdb.so>
 *
 * ("none" where nothing of that name is mapped.)
 *
 *   relocated-vdb OUT.vdb
 * SPDX-License-Identifier: Apache-2.0
 */
#include <acmlbm/acmlbm.h>
#include <stdio.h>
#include <string.h>

/* The path of the first mapping whose file name starts with prefix, into
 * path[size]; "none" where there is none. */
static void mapped(const char *prefix, char *path, size_t size)
{
    snprintf(path, size, "none");
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return;
    char line[8192];
    while (fgets(line, sizeof line, f) != NULL) {
        char *file = strchr(line, '/'); /* the fields before the path hold no '/' */
        if (file == NULL)
            continue;
        file[strcspn(file, "\n")] = '\0';
        const char *name = strrchr(file, '/') + 1;
        if (strncmp(name, prefix, strlen(prefix)) == 0) {
            snprintf(path, size, "%s", file);
            break;
        }
    }
    fclose(f);
}

static int export_fields(const char *out)
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = o.ny = o.nz = 8;
    o.viscosity = 0.1;
    o.backend = ACM_BACKEND_CPU;
    acm_domain *d = NULL;
    if (acm_domain_create(&d, &o) != ACM_OK) {
        printf("error: cannot create the domain\n");
        return 1;
    }
    const acm_field fields[] = {ACM_FIELD_DENSITY, ACM_FIELD_VELOCITY};
    const acm_status st = acm_domain_export_vdb(d, out, fields, 2);
    if (st != ACM_OK)
        printf("error: acm_domain_export_vdb: %s: %s\n", acm_status_string(st),
               acm_domain_last_error(d));
    acm_domain_destroy(d);
    return st == ACM_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        printf("usage: relocated-vdb OUT.vdb\n");
        return 2;
    }
    const int failed = export_fields(argv[1]);
    char path[8192];
    mapped("libacmlbm.so", path, sizeof path);
    printf("lib %s\n", path);
    mapped("acmlbm-vdb.so", path, sizeof path);
    printf("module %s\n", path);
    return failed;
}
