# Check 5: doctor for the measured CPU 1 (the one the RT boot isolates), as JSON for the
# verdict and as text for the reader.
/jitterlab doctor --json --cpus 1 >doctor.json 2>doctor.stderr
echo $? >doctor.exit
/jitterlab doctor --cpus 1 >doctor.txt 2>&1
