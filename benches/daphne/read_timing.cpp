// Times DAPHNE's own readDaphne on a runtime-dialect CSRMatrix<double> file: the median of
// N reads in one process, as examples/csr_timing.rs times this crate's from_file.
// Built by benches/daphne_csr.sh against ../shared/daphne-reader (DAPHNE's unmodified reader).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <runtime/local/datastructures/CSRMatrix.h>
#include <runtime/local/datastructures/DataObjectFactory.h>
#include <runtime/local/io/ReadDaphne.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: daphne-read-timing FILE [REPS]\n");
        return 2;
    }
    const int reps = argc > 2 ? std::atoi(argv[2]) : 9;
    std::vector<double> ms;
    size_t nnz = 0;
    for (int i = 0; i < reps; i++) {
        CSRMatrix<double> *m = nullptr;
        auto start = std::chrono::steady_clock::now();
        readDaphne(m, argv[1]);
        auto end = std::chrono::steady_clock::now();
        ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
        nnz = m->getNumNonZeros();
        DataObjectFactory::destroy(m);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("daphne readDaphne median %.1f ms (min %.1f, max %.1f), %zu non-zeros\n", ms[reps / 2],
                ms.front(), ms.back(), nnz);
    return 0;
}
