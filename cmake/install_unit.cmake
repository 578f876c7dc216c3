# Run at install time (install(CODE) in CMakeLists.txt): writes the systemd unit with
# ExecStart pointing into the prefix being installed to (`cmake --install --prefix P`:
# P/bin; cpack: /usr/bin, as it installs with DESTDIR), then installs it.
# In: SOURCE (deploy/systemd/pagoda.service), WORK (a build folder), BINDIR, UNITDIR
# (relative to the prefix).
set(PAGODA_BINDIR "${CMAKE_INSTALL_PREFIX}/${BINDIR}")
configure_file("${SOURCE}" "${WORK}/pagoda.service" @ONLY)
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${UNITDIR}" TYPE FILE FILES "${WORK}/pagoda.service")
