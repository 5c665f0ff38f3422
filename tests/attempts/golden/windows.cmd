@echo off
rem Build script for my_ext [cpp_extension, setup.py]
rem written by torchsmith: the same environment and steps as 'torchsmith build'
rem profile fast; archs 8.6;12.0+PTX; jobs 8; cache none
rem run set TORCHSMITH_CLEAN=1 in the same window first to remove the build directory
setlocal EnableExtensions DisableDelayedExpansion
if not defined TORCHSMITH_LOG set "TORCHSMITH_LOG=torchsmith-build.log"
for %%I in ("%TORCHSMITH_LOG%") do set "TORCHSMITH_LOG=%%~fI"

call :log checking tools
if not exist "C:\Users\Ann Lee\venvs\torch (cu129)\Scripts\python.exe" (call :fail not found: C:\Users\Ann Lee\venvs\torch [cu129]\Scripts\python.exe & exit /b 1)
if not exist "C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.9\bin\nvcc.exe" (call :fail no nvcc at C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.9\bin\nvcc.exe & exit /b 1)

call :log environment
set "CUDA_HOME=C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.9"
set "TORCH_CUDA_ARCH_LIST=8.6;12.0+PTX"
set "MAX_JOBS=8"
set "NVCC_APPEND_FLAGS=--threads 2 -DNAME=100%% -DQ='x'"

if "%TORCHSMITH_CLEAN%"=="1" if exist "C:\Users\Ann Lee\src\my ext & co (test)\build" (
  git -C "C:\Users\Ann Lee\src\my ext & co (test)" rev-parse --is-inside-work-tree >nul 2>nul || (call :fail clean: git cannot list C:\Users\Ann Lee\src\my ext _ co [test] [no git work tree, no git, or git refusing it], so what is tracked there is not known; nothing removed [torchsmith clean C:\Users\Ann Lee\src\my ext _ co [test] removes its build outputs] & exit /b 1)
  git -C "C:\Users\Ann Lee\src\my ext & co (test)" ls-files --cached --others --exclude-standard -- build 2>nul | findstr /r . >nul && (call :fail clean: C:\Users\Ann Lee\src\my ext _ co [test]\build holds files git tracks or does not ignore; not removed [torchsmith clean removes only its build outputs] & exit /b 1)
  rmdir /s /q "C:\Users\Ann Lee\src\my ext & co (test)\build"
)

call :log step build: C:\Users\Ann Lee\venvs\torch [cu129]\Scripts\python.exe setup.py build_ext --inplace -DFLAG=a_b_c_d_PATH_
cd /d "C:\Users\Ann Lee\src\my ext & co (test)" || (call :fail no folder C:\Users\Ann Lee\src\my ext _ co [test] & exit /b 1)
setlocal
set "DISTUTILS_USE_SDK=1"
"C:\Users\Ann Lee\venvs\torch (cu129)\Scripts\python.exe" setup.py build_ext --inplace "-DFLAG=a&b|c^d%%PATH%%"
if %ERRORLEVEL% neq 0 (call :fail step build & exit /b 1)
endlocal

call :log build finished
exit /b 0

:log
echo %DATE% %TIME% %*
>>"%TORCHSMITH_LOG%" echo %DATE% %TIME% %*
exit /b 0

:fail
call :log FAILED: %*
exit /b 1
