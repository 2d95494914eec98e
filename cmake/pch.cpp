// Carrier translation unit for the precompiled header shared by executables.
