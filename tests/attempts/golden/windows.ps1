# Build script for my_ext (cpp_extension, setup.py)
# written by torchsmith: the same environment and steps as 'torchsmith build'
# profile fast; archs 8.6;12.0+PTX; jobs 8; cache none
# set $env:TORCHSMITH_CLEAN = '1' before running it to remove the build directory
$ErrorActionPreference = 'Stop'
Set-StrictMode -Version 3.0
$Log = if ($env:TORCHSMITH_LOG) { $env:TORCHSMITH_LOG } else { 'torchsmith-build-' + (Get-Date).ToUniversalTime().ToString('yyyyMMddTHHmmssZ') + '.log' }
# one log however the steps change folder: anchor a relative name where the script starts
if (-not [System.IO.Path]::IsPathRooted($Log)) { $Log = Join-Path (Get-Location).Path $Log }
function Write-Log([string]$Message) {
    $line = (Get-Date).ToUniversalTime().ToString('yyyy-MM-ddTHH:mm:ssZ') + ' ' + $Message
    Write-Host $line
    Add-Content -LiteralPath $Log -Value $line
}
function Stop-Build([string]$Message) { throw $Message }

# run as .\build.ps1, the script shares your session: note its variables and folder
# now, and put them back however the build ends
$SavedEnv = @{}
foreach ($Item in [Environment]::GetEnvironmentVariables().GetEnumerator()) { $SavedEnv[$Item.Key] = $Item.Value }
$SavedLocation = (Get-Location).Path
$Failed = $null
try {
    Write-Log 'checking tools'
    if (-not (Get-Command -Name 'C:\Users\Ann Lee\venvs\torch (cu129)\Scripts\python.exe' -ErrorAction SilentlyContinue)) { Stop-Build 'not found: C:\Users\Ann Lee\venvs\torch (cu129)\Scripts\python.exe' }
    if (-not (Test-Path -LiteralPath 'C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.9\bin\nvcc.exe')) { Stop-Build 'no nvcc at C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.9\bin\nvcc.exe' }

    Write-Log 'environment'
    $env:CUDA_HOME = 'C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.9'
    $env:TORCH_CUDA_ARCH_LIST = '8.6;12.0+PTX'
    $env:MAX_JOBS = '8'
    $env:NVCC_APPEND_FLAGS = '--threads 2 -DNAME=100% -DQ=''x'''

    if ($env:TORCHSMITH_CLEAN -eq '1' -and (Test-Path -LiteralPath 'C:\Users\Ann Lee\src\my ext & co (test)\build')) {
        $Listed = $null
        $GitStatus = 1
        if (Get-Command -Name git -ErrorAction SilentlyContinue) {
            $SavedPreference = $ErrorActionPreference
            $ErrorActionPreference = 'Continue'  # 5.1 turns git's stderr into errors
            $Listed = git -C 'C:\Users\Ann Lee\src\my ext & co (test)' ls-files --cached --others --exclude-standard -- 'build' 2>$null
            $GitStatus = $LASTEXITCODE
            $ErrorActionPreference = $SavedPreference
        }
        if ($GitStatus -ne 0) { Stop-Build 'clean: git cannot list C:\Users\Ann Lee\src\my ext & co (test) (no git work tree, no git, or git refusing it), so what is tracked there is not known; nothing removed (torchsmith clean C:\Users\Ann Lee\src\my ext & co (test) removes its build outputs)' }
        if ($Listed) { Stop-Build 'clean: C:\Users\Ann Lee\src\my ext & co (test)\build holds files git tracks or does not ignore; not removed (torchsmith clean removes only its build outputs)' }
        Write-Log 'clean: removing C:\Users\Ann Lee\src\my ext & co (test)\build'
        $Folder = Get-Item -LiteralPath 'C:\Users\Ann Lee\src\my ext & co (test)\build' -Force
        if ($Folder.Attributes -band [System.IO.FileAttributes]::ReparsePoint) {
            # a junction or link: the link goes, never what it points at (5.1's
            # Remove-Item -Recurse would empty the target)
            [System.IO.Directory]::Delete($Folder.FullName, $false)
        } else {
            Remove-Item -LiteralPath 'C:\Users\Ann Lee\src\my ext & co (test)\build' -Recurse -Force
        }
    }

    Write-Log 'step build: C:\Users\Ann Lee\venvs\torch (cu129)\Scripts\python.exe setup.py build_ext --inplace -DFLAG=a&b|c^d%PATH%'
    Set-Location -LiteralPath 'C:\Users\Ann Lee\src\my ext & co (test)'
    $env:DISTUTILS_USE_SDK = '1'
    & 'C:\Users\Ann Lee\venvs\torch (cu129)\Scripts\python.exe' 'setup.py' 'build_ext' '--inplace' '-DFLAG=a&b|c^d%PATH%'
    if ($LASTEXITCODE -ne 0) { Stop-Build ('step build (exit status ' + $LASTEXITCODE + ')') }
    Remove-Item -LiteralPath Env:DISTUTILS_USE_SDK -ErrorAction SilentlyContinue
} catch {
    $Failed = $_.Exception.Message
} finally {
    foreach ($Name in @([Environment]::GetEnvironmentVariables().Keys)) {
        if (-not $SavedEnv.ContainsKey($Name)) { [Environment]::SetEnvironmentVariable($Name, $null) }
    }
    foreach ($Name in $SavedEnv.Keys) { [Environment]::SetEnvironmentVariable($Name, $SavedEnv[$Name]) }
    Set-Location -LiteralPath $SavedLocation
}
if ($null -ne $Failed) { Write-Log ('FAILED: ' + $Failed); exit 1 }
Write-Log 'build finished'
