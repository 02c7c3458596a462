# Install rules and the Debian package (`cpack -G DEB` in the build directory): nsrvd in
# /usr/bin, /etc/nsrvd/nsrvd.properties (a conffile: every key with its default, commented),
# the systemd unit, nsrvd(8), the guide in /usr/share/doc/nsrvd, maintainer scripts in
# conf/debian/ (system user nsrvd, /var/lib/nsrvd kept on remove and deleted on purge).
set(pkgdir ${PROJECT_SOURCE_DIR}/conf/debian)
# Whoever distributes the package sets a real address (lintian flags the placeholder).
set(NSRV_DEB_MAINTAINER "nsrvd maintainers <nsrvd@localhost>" CACHE STRING
    "Maintainer of the Debian package")

# The conffile: conf/nsrvd.properties.example with every assignment commented out, so the
# table's defaults apply until an operator uncomments a line.
file(READ ${PROJECT_SOURCE_DIR}/conf/nsrvd.properties.example example)
string(REGEX REPLACE "\n([A-Za-z])" "\n#\\1" example "${example}")
string(REPLACE "given with -c." "given with -c (the packaged service reads this file)." example
       "${example}")
file(WRITE ${PROJECT_BINARY_DIR}/package/nsrvd.properties "${example}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/conf/nsrvd.properties.example)

# Debian wants the manual page and changelog compressed reproducibly (gzip -n).
set(man_gz ${PROJECT_BINARY_DIR}/package/nsrvd.8.gz)
add_custom_command(OUTPUT ${man_gz} COMMAND gzip -9nc ${NSRV_MANPAGE} > ${man_gz}
                   DEPENDS ${NSRV_MANPAGE})
# A native package (no Debian revision): lintian wants changelog.gz.
set(changelog ${PROJECT_BINARY_DIR}/package/changelog)
file(WRITE ${changelog}
     "nsrvd (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * Package built by CPack from the nsrvd source tree.\n\n"
     " -- ${NSRV_DEB_MAINTAINER}  Thu, 01 Jan 2026 00:00:00 +0000\n")
add_custom_command(OUTPUT ${changelog}.gz COMMAND gzip -9nc ${changelog} > ${changelog}.gz
                   DEPENDS ${changelog})
add_custom_target(package_files ALL DEPENDS ${man_gz} ${changelog}.gz)
# nsrvd.8 is made by a custom command in src/: a file from another directory is only
# known to this one through its target.
add_dependencies(package_files manpage)

include(GNUInstallDirs)
install(TARGETS nsrvd RUNTIME DESTINATION bin)
# TLS and ACL signatures (src/crypto), loaded by nsrvd from ../lib/nsrvd when configured.
install(TARGETS nsrvd-crypto LIBRARY DESTINATION lib/nsrvd)
install(FILES ${PROJECT_BINARY_DIR}/package/nsrvd.properties DESTINATION /etc/nsrvd)
# Type=notify: nsrvd speaks the notify protocol itself (src/server/sd_notify.c).
configure_file(${PROJECT_SOURCE_DIR}/conf/nsrvd.service ${PROJECT_BINARY_DIR}/package/nsrvd.service COPYONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/nsrvd.service DESTINATION /lib/systemd/system)
install(FILES ${man_gz} DESTINATION share/man/man8)
install(FILES ${pkgdir}/copyright ${changelog}.gz DESTINATION share/doc/nsrvd)
# The operator's guide with the documents it links to, in the repository's layout so that
# its relative links hold: README.md, docs/ (design notes, benchmarks, compatibility) and the
# container guide with the screenshot docs/design/observability.md shows.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/nsrvd)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs DESTINATION share/doc/nsrvd)
install(FILES ${PROJECT_SOURCE_DIR}/docker/README.md ${PROJECT_SOURCE_DIR}/docker/cluster-page.png
        DESTINATION share/doc/nsrvd/docker)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nsrvd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "${NSRV_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Apache RocketMQ NameServer daemon")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "nsrvd answers RocketMQ broker registrations and client route queries,\nreads the Java NameServer's properties files, and can share broker\nliveness between nodes with signed UDP gossip.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${pkgdir}/conffiles ${pkgdir}/postinst ${pkgdir}/prerm ${pkgdir}/postrm)
set(CPACK_STRIP_FILES ON)
include(CPack)
